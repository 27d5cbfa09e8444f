"""P4Runtime ids and aliases as p4c assigns them.

The top 8 bits of an id are the resource type (``P4Ids``), the low 24 bits Jenkins'
one-at-a-time hash of the fully qualified name. Explicit ``@id`` values are reserved first;
then, per resource type, names are hashed in sorted order and collisions are resolved by
incrementing the hash value until a free id is found. Aliases are the shortest dot-separated
suffix that is unique among all symbols of the program.
"""
from __future__ import annotations


from p4.config.v1 import p4info_pb2

from p4target.errors import P4TargetError

PREFIX_ACTION = p4info_pb2.P4Ids.ACTION
PREFIX_TABLE = p4info_pb2.P4Ids.TABLE
PREFIX_VALUE_SET = p4info_pb2.P4Ids.VALUE_SET
PREFIX_CONTROLLER_HEADER = p4info_pb2.P4Ids.CONTROLLER_HEADER
PREFIX_ACTION_PROFILE = p4info_pb2.P4Ids.ACTION_PROFILE
PREFIX_COUNTER = p4info_pb2.P4Ids.COUNTER
PREFIX_DIRECT_COUNTER = p4info_pb2.P4Ids.DIRECT_COUNTER
PREFIX_METER = p4info_pb2.P4Ids.METER
PREFIX_DIRECT_METER = p4info_pb2.P4Ids.DIRECT_METER
PREFIX_REGISTER = p4info_pb2.P4Ids.REGISTER
PREFIX_DIGEST = p4info_pb2.P4Ids.DIGEST


def jenkins_one_at_a_time(data: bytes) -> int:
    """Bob Jenkins' one-at-a-time hash (32 bits), the hash p4c applies to P4Info names."""
    h = 0
    for byte in data:
        h = (h + byte) & 0xFFFFFFFF
        h = (h + (h << 10)) & 0xFFFFFFFF
        h ^= h >> 6
    h = (h + (h << 3)) & 0xFFFFFFFF
    h ^= h >> 11
    h = (h + (h << 15)) & 0xFFFFFFFF
    return h


def hashed_id(prefix: int, name: str) -> int:
    """The id p4c gives ``name`` of resource type ``prefix`` when nothing collides."""
    return (prefix << 24) | (jenkins_one_at_a_time(name.encode("utf-8")) & 0xFFFFFF)


class SymbolIds:
    """Collects the program's P4Runtime symbols, then assigns ids and aliases like p4c."""

    def __init__(self, explicit_ids: dict[str, int] | None = None) -> None:
        self._explicit = dict(explicit_ids or {})
        self._symbols: dict[int, dict[str, int | None]] = {}
        self._taken: set[int] = set()
        self._all_names: set[str] = set()
        self._suffix_counts: dict[tuple[str, ...], int] = {}
        self._done = False

    def add(self, prefix: int, name: str) -> None:
        """Register ``name`` as a symbol of resource type ``prefix`` (duplicates are fine)."""
        if self._done:
            raise RuntimeError("symbols added after ids were assigned")
        table = self._symbols.setdefault(prefix, {})
        if name in table:
            return
        table[name] = self._reserve_explicit(prefix, name)
        if name not in self._all_names:
            self._all_names.add(name)
            parts = tuple(name.split("."))
            for k in range(1, len(parts) + 1):
                suffix = parts[-k:]
                self._suffix_counts[suffix] = self._suffix_counts.get(suffix, 0) + 1

    def _reserve_explicit(self, prefix: int, name: str) -> int | None:
        if name not in self._explicit:
            return None
        value = int(self._explicit[name])
        if not 0 <= value <= 0xFFFFFFFF:
            raise P4TargetError(f"@id {value} of '{name}' is not a 32-bit unsigned integer")
        top = value >> 24
        if top not in (0, prefix):
            raise P4TargetError(f"@id 0x{value:08x} of '{name}' has the wrong 8-bit prefix "
                                f"(expected 0x{prefix:02x})")
        value |= prefix << 24
        if value in self._taken:
            raise P4TargetError(f"@id 0x{value:08x} is assigned to multiple declarations")
        self._taken.add(value)
        return value

    def assign(self) -> None:
        """Give every symbol without an explicit id its hashed id (sorted names, linear probing)."""
        if self._done:
            return
        for prefix in sorted(self._symbols):
            table = self._symbols[prefix]
            for name in sorted(n for n, v in table.items() if v is None):
                value = jenkins_one_at_a_time(name.encode("utf-8"))
                start = value
                while True:
                    candidate = (prefix << 24) | (value & 0xFFFFFF)
                    if candidate not in self._taken:
                        break
                    value = (value + 1) & 0xFFFFFFFF
                    if value == start:
                        raise P4TargetError(f"no P4Runtime id left for '{name}'")
                self._taken.add(candidate)
                table[name] = candidate
        self._done = True

    def id(self, prefix: int, name: str) -> int:
        """The id of a symbol added before :meth:`assign`."""
        self.assign()
        try:
            value = self._symbols[prefix][name]
        except KeyError:
            raise P4TargetError(f"internal: P4Info symbol '{name}' was never registered") from None
        assert value is not None
        return value

    def alias(self, name: str) -> str:
        """Shortest suffix of dot-separated components that no other symbol shares."""
        parts = tuple(name.split("."))
        for k in range(1, len(parts) + 1):
            if self._suffix_counts.get(parts[-k:], 0) < 2:
                return ".".join(parts[-k:])
        return name
