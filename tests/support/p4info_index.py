"""Name <-> id lookups over a P4Info message, for tests that inspect what the compiler wrote
(the controller has its own index, `controller.p4info.P4Info`)."""
from __future__ import annotations

from typing import Any

from p4.config.v1 import p4info_pb2


class P4InfoLookupError(LookupError):
    """A name or id that the P4Info does not contain."""



KINDS = ("tables", "actions", "action_profiles", "counters", "direct_counters", "meters",
         "direct_meters", "controller_packet_metadata", "value_sets", "registers", "digests")


class P4InfoIndex:
    """Name <-> id lookups over one P4Info message (names may be full names or aliases).

    ``kind`` is the P4Info field name: ``tables``, ``actions``, ``counters``, ... (see KINDS).
    Misses raise :class:`P4InfoLookupError` naming what is missing.
    """

    def __init__(self, p4info: p4info_pb2.P4Info) -> None:
        self.p4info = p4info
        self._by_name: dict[str, dict[str, Any]] = {}
        self._by_id: dict[str, dict[int, Any]] = {}
        self._kind_of_id: dict[int, str] = {}
        for kind in KINDS:
            names: dict[str, Any] = {}
            ids: dict[int, Any] = {}
            for obj in getattr(p4info, kind):
                names[obj.preamble.name] = obj
                ids[obj.preamble.id] = obj
                self._kind_of_id[obj.preamble.id] = kind
            for obj in getattr(p4info, kind):
                alias = obj.preamble.alias
                if alias and alias not in names:
                    names[alias] = obj
            self._by_name[kind] = names
            self._by_id[kind] = ids

    @staticmethod
    def _check_kind(kind: str) -> None:
        if kind not in KINDS:
            raise P4InfoLookupError(f"unknown P4Info object kind '{kind}' (one of {', '.join(KINDS)})")

    def get(self, kind: str, key: str | int) -> Any:
        """The P4Info message of ``kind`` with this name/alias (str) or id (int)."""
        self._check_kind(kind)
        found = self._by_id[kind].get(key) if isinstance(key, int) else self._by_name[kind].get(key)
        if found is None:
            raise P4InfoLookupError(f"P4Info has no {kind.rstrip('s').replace('_', ' ')} {key!r}")
        return found

    def has(self, kind: str, key: str | int) -> bool:
        """True if ``get`` would find it."""
        self._check_kind(kind)
        return (key in self._by_id[kind]) if isinstance(key, int) else (key in self._by_name[kind])

    def id(self, kind: str, name: str) -> int:
        """Id of the object of ``kind`` named ``name`` (full name or alias)."""
        return self.get(kind, name).preamble.id

    def name(self, kind: str, ident: int) -> str:
        """Full name of the object of ``kind`` with id ``ident``."""
        return self.get(kind, ident).preamble.name

    def kind_of(self, ident: int) -> str:
        """Which kind of object carries this id."""
        try:
            return self._kind_of_id[ident]
        except KeyError:
            raise P4InfoLookupError(f"P4Info has no object with id {ident}") from None

    def names(self, kind: str) -> list[str]:
        """Full names of every object of ``kind`` in P4Info order."""
        self._check_kind(kind)
        return [obj.preamble.name for obj in getattr(self.p4info, kind)]

    # Convenience for the common kinds.
    def table(self, key: str | int) -> Any:
        return self.get("tables", key)

    def action(self, key: str | int) -> Any:
        return self.get("actions", key)

    def table_id(self, name: str) -> int:
        return self.id("tables", name)

    def action_id(self, name: str) -> int:
        return self.id("actions", name)

    def match_field(self, table: str | int, key: str | int) -> Any:
        """Match field of a table by field name or id."""
        t = self.table(table)
        for mf in t.match_fields:
            if (mf.id == key) if isinstance(key, int) else (mf.name == key):
                return mf
        raise P4InfoLookupError(f"table '{t.preamble.name}' has no match field {key!r}")

    def param(self, action: str | int, key: str | int) -> Any:
        """Parameter of an action by name or id."""
        a = self.action(action)
        for p in a.params:
            if (p.id == key) if isinstance(key, int) else (p.name == key):
                return p
        raise P4InfoLookupError(f"action '{a.preamble.name}' has no parameter {key!r}")

    def controller_metadata(self, header: str | int, key: str | int) -> Any:
        """Metadata field of a controller header (``packet_in``/``packet_out``) by name or id."""
        h = self.get("controller_packet_metadata", header)
        for md in h.metadata:
            if (md.id == key) if isinstance(key, int) else (md.name == key):
                return md
        raise P4InfoLookupError(f"controller header '{h.preamble.name}' has no metadata {key!r}")

    def table_actions(self, table: str | int) -> list[str]:
        """Names of the actions a table may run (its action_refs, in order)."""
        return [self.name("actions", ref.id) for ref in self.table(table).action_refs]
