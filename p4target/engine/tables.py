"""Match-action tables and action profiles: entries, lookup with BMv2's ordering rules."""
from __future__ import annotations

import bisect
from operator import and_

from dataclasses import dataclass
from typing import Any, Sequence

from . import match as m
from .tuple_space import TupleSpace
from .errors import (DuplicateEntryError, InvalidEntryError, NoSuchHandleError,
                     ResourceExhaustedError)


@dataclass
class ActionSpec:
    """An action of the program: name, id, parameter (name, bitwidth) list, compiled body."""
    name: str
    id: int
    params: list[tuple[str, int]]
    fn: Any = None


@dataclass
class TableEntry:
    """One installed entry. `priority` follows BMv2: a lower value wins among matches."""
    handle: int
    key: tuple
    action: str | None
    action_data: tuple
    priority: int
    member: int | None = None
    group: int | None = None
    packets: int = 0
    bytes: int = 0
    meter: Any = None
    # internal matching form: per field (mask, masked_value, low, high)
    _m: tuple = ()
    _fn: Any = None


@dataclass
class KeyField:
    """A key field of a table: match kind, BMv2 name and bit width."""
    match_type: str
    name: str
    width: int


def _norm(kind: str, width: int, value: m.MatchValue) -> tuple[Any, tuple[int, int, int, int]]:
    full = (1 << width) - 1
    if kind == "valid":
        if isinstance(value, m.Valid):
            v = int(value.valid)
        elif isinstance(value, (m.Exact,)):
            v = int(bool(value.value))
        elif isinstance(value, int):
            v = int(bool(value))
        else:
            raise InvalidEntryError(f"valid key needs Valid(...), got {value!r}")
        return m.Valid(bool(v)), (1, v, 0, 0)
    if isinstance(value, int) and not isinstance(value, bool):
        value = m.Exact(value)
    if kind == "exact":
        if not isinstance(value, m.Exact):
            raise InvalidEntryError(f"exact key needs Exact(...), got {value!r}")
        _check(value.value, width)
        return value, (full, value.value, 0, 0)
    if kind == "lpm":
        if isinstance(value, m.Exact):
            value = m.Lpm(value.value, width)
        if not isinstance(value, m.Lpm):
            raise InvalidEntryError(f"lpm key needs Lpm(value, prefix_len), got {value!r}")
        if not 0 <= value.prefix_len <= width:
            raise InvalidEntryError(f"prefix length {value.prefix_len} out of range for {width}-bit field")
        _check(value.value, width)
        mask = full ^ ((1 << (width - value.prefix_len)) - 1)
        return m.Lpm(value.value & mask, value.prefix_len), (mask, value.value & mask, 0, 0)
    if kind == "ternary":
        if isinstance(value, m.Exact):
            value = m.Ternary(value.value, full)
        if not isinstance(value, m.Ternary):
            raise InvalidEntryError(f"ternary key needs Ternary(value, mask), got {value!r}")
        _check(value.value, width)
        _check(value.mask, width)
        return m.Ternary(value.value & value.mask, value.mask), (value.mask, value.value & value.mask, 0, 0)
    if kind == "range":
        if isinstance(value, m.Exact):
            value = m.Range(value.value, value.value)
        if not isinstance(value, m.Range):
            raise InvalidEntryError(f"range key needs Range(low, high), got {value!r}")
        _check(value.low, width)
        _check(value.high, width)
        return value, (0, 0, value.low, value.high)
    if kind == "optional":
        if isinstance(value, m.Exact):
            value = m.Optional(value.value)
        if not isinstance(value, m.Optional):
            raise InvalidEntryError(f"optional key needs Optional(value | wildcard), got {value!r}")
        if value.wildcard:
            return value, (0, 0, 0, 0)
        _check(value.value, width)
        return value, (full, value.value, 0, 0)
    raise InvalidEntryError(f"unsupported match kind '{kind}'")


def _check(value: int, width: int) -> None:
    if value < 0 or value >> width:
        raise InvalidEntryError(f"value {value:#x} does not fit in {width} bits")


class ActionProfile:
    """Members (action + data) and groups (sets of members) shared by indirect tables."""

    def __init__(self, name: str, actions: dict[str, ActionSpec], size: int = 0,
                 selector: Any = None) -> None:
        self.name = name
        self.actions = actions
        self.size = size
        self.selector = selector  # compiled hash function for groups, or None
        self.members: dict[int, tuple[str, tuple]] = {}
        self.groups: dict[int, list[int]] = {}
        self._next_member = 0
        self._next_group = 0

    def add_member(self, action: str, action_data: Sequence[int] = ()) -> int:
        data = check_action_data(self.actions, action, action_data)
        if self.size and len(self.members) >= self.size:
            raise ResourceExhaustedError(f"action profile '{self.name}' is full ({self.size} members)")
        handle = self._next_member
        self._next_member += 1
        self.members[handle] = (action, data)
        return handle

    def modify_member(self, member: int, action: str, action_data: Sequence[int] = ()) -> None:
        self._member(member)
        self.members[member] = (action, check_action_data(self.actions, action, action_data))

    def delete_member(self, member: int) -> None:
        self._member(member)
        for grp, mbrs in self.groups.items():
            if member in mbrs:
                raise InvalidEntryError(f"member {member} of '{self.name}' is still in group {grp}")
        del self.members[member]

    def create_group(self) -> int:
        handle = self._next_group
        self._next_group += 1
        self.groups[handle] = []
        return handle

    def delete_group(self, group: int) -> None:
        self._group(group)
        del self.groups[group]

    def add_member_to_group(self, member: int, group: int) -> None:
        self._member(member)
        mbrs = self._group(group)
        if member not in mbrs:
            mbrs.append(member)

    def remove_member_from_group(self, member: int, group: int) -> None:
        mbrs = self._group(group)
        if member not in mbrs:
            raise NoSuchHandleError(f"member {member} is not in group {group} of '{self.name}'")
        mbrs.remove(member)

    def _member(self, member: int) -> tuple[str, tuple]:
        try:
            return self.members[member]
        except KeyError:
            raise NoSuchHandleError(f"no member {member} in action profile '{self.name}'") from None

    def _group(self, group: int) -> list[int]:
        try:
            return self.groups[group]
        except KeyError:
            raise NoSuchHandleError(f"no group {group} in action profile '{self.name}'") from None


def check_action_data(actions: dict[str, ActionSpec], action: str, data: Sequence[int]) -> tuple:
    """Validate an action name and its data against the action's parameters."""
    spec = actions.get(action)
    if spec is None:
        raise InvalidEntryError(f"action '{action}' is not an action of this table")
    if len(data) != len(spec.params):
        raise InvalidEntryError(
            f"action '{action}' takes {len(spec.params)} parameter(s), got {len(data)}")
    out = []
    for (pname, width), value in zip(spec.params, data):
        value = int(value)
        if value < 0 or value >> width:
            raise InvalidEntryError(f"parameter '{pname}' of '{action}': {value:#x} does not fit in {width} bits")
        out.append(value)
    return tuple(out)


class Table:
    """A match-action table with BMv2's lookup rules.

    exact-only tables use a hash map; a table whose widest kind is lpm picks the longest
    prefix (one hash map per prefix length); tables with ternary/range/optional keys pick the
    matching entry with the lowest priority value (ties: the entry added first), found by
    tuple space search (`tuple_space`).
    """

    def __init__(self, name: str, keys: list[KeyField], actions: dict[str, ActionSpec],
                 size: int, kind: str = "simple", profile: ActionProfile | None = None,
                 with_counters: bool = False, direct_meter: Any = None) -> None:
        self.name = name
        self.keys = keys
        self.actions = actions
        self.size = size
        self.kind = kind
        self.profile = profile
        self.with_counters = with_counters
        self.direct_meter = direct_meter
        kinds = {k.match_type for k in keys}
        if kinds & {"ternary", "range", "optional"}:
            self.match_type = "ternary"
        elif "lpm" in kinds:
            self.match_type = "lpm"
        else:
            self.match_type = "exact"
        self.entries: dict[int, TableEntry] = {}
        self._exact: dict[tuple, TableEntry] = {}
        self._keys: set[tuple] = set()  # (match form, priority) of every entry: duplicate check
        self._ordered: list[TableEntry] = []
        self._ranges: list[int] = [i for i, k in enumerate(keys) if k.match_type == "range"]
        self._next_handle = 0
        self._lpm_groups: list = []
        self._lpm_index = next((i for i, k in enumerate(keys) if k.match_type == "lpm"), -1)
        self._tuples = TupleSpace(self._ranges)
        self.default_action: str | None = None
        self.default_data: tuple = ()
        self.default_const = False
        self.initial_default: tuple[str | None, tuple] = (None, ())
        self.default_packets = 0
        self.default_bytes = 0
        self.const_entries = False  # True when the program fixes the entries (P4 `const entries`)

    # -- entries -------------------------------------------------------------------------
    def add(self, key: Sequence[m.MatchValue], action: str | None, action_data: Sequence[int] = (),
            priority: int | None = None, member: int | None = None, group: int | None = None) -> int:
        nkey, mform = self._normalize_key(key)
        if self.match_type == "ternary":
            if priority is None:
                raise InvalidEntryError(f"table '{self.name}' has ternary/range/optional keys: a priority is required")
        else:
            priority = 0 if priority is None else priority
        data = self._check_target(action, action_data, member, group)
        if self.size and len(self.entries) >= self.size:
            raise ResourceExhaustedError(f"table '{self.name}' is full ({self.size} entries)")
        if self.match_type != "exact" and (mform, priority) in self._keys:
            raise DuplicateEntryError(f"table '{self.name}' already has an entry with this key")
        if self.match_type == "exact" and tuple(v for _, v, _, _ in mform) in self._exact:
            raise DuplicateEntryError(f"table '{self.name}' already has an entry with this key")
        handle = self._next_handle
        self._next_handle += 1
        entry = TableEntry(handle, nkey, action, data, priority, member, group, _m=mform)
        if self.direct_meter is not None:
            entry.meter = self.direct_meter.new_cell()
        self.entries[handle] = entry
        self._keys.add((mform, priority))
        if self.match_type == "exact":
            self._exact[tuple(v for _, v, _, _ in mform)] = entry
        elif self.match_type == "ternary":
            self._tuples.add(entry)
            return handle
        self._insert_ordered(entry)
        return handle

    def modify(self, handle: int, action: str | None, action_data: Sequence[int] = (),
               member: int | None = None, group: int | None = None) -> None:
        entry = self.get(handle)
        entry.action_data = self._check_target(action, action_data, member, group)
        entry.action, entry.member, entry.group = action, member, group

    def delete(self, handle: int) -> None:
        entry = self.get(handle)
        del self.entries[handle]
        self._keys.discard((entry._m, entry.priority))
        if self.match_type == "exact":
            self._exact.pop(tuple(v for _, v, _, _ in entry._m), None)
        elif self.match_type == "ternary":
            self._tuples.remove(entry)
            return
        self._reorder()

    def clear(self) -> None:
        self.entries.clear()
        self._keys.clear()
        self._exact.clear()
        self._tuples.clear()
        self._ordered = []
        self._lpm_groups = []

    def get(self, handle: int) -> TableEntry:
        try:
            return self.entries[handle]
        except KeyError:
            raise NoSuchHandleError(f"no entry {handle} in table '{self.name}'") from None

    def find(self, key: Sequence[m.MatchValue], priority: int | None = None) -> TableEntry | None:
        """The entry with exactly this key (and priority, for ternary tables), if any."""
        nkey, _ = self._normalize_key(key)
        for entry in self.entries.values():
            if entry.key == nkey and (self.match_type != "ternary" or priority is None
                                      or entry.priority == priority):
                return entry
        return None

    def set_default(self, action: str, action_data: Sequence[int] = ()) -> None:
        if self.default_const and action != self.default_action:
            raise InvalidEntryError(f"table '{self.name}' has a const default action")
        self.default_data = check_action_data(self.actions, action, action_data)
        self.default_action = action

    def reset_default(self) -> None:
        self.default_action, self.default_data = self.initial_default

    def _check_target(self, action, action_data, member, group) -> tuple:
        if self.profile is not None:
            if member is not None:
                self.profile._member(member)
            elif group is not None:
                if self.kind != "indirect_ws":
                    raise InvalidEntryError(f"table '{self.name}' has no action selector: groups not allowed")
                self.profile._group(group)
            else:
                raise InvalidEntryError(f"table '{self.name}' is indirect: give a member or group")
            return ()
        if action is None:
            raise InvalidEntryError(f"table '{self.name}': an action is required")
        return check_action_data(self.actions, action, action_data)

    def _normalize_key(self, key: Sequence[m.MatchValue]) -> tuple[tuple, tuple]:
        if len(key) != len(self.keys):
            raise InvalidEntryError(f"table '{self.name}' has {len(self.keys)} key field(s), got {len(key)}")
        pairs = [_norm(k.match_type, k.width, v) for k, v in zip(self.keys, key)]
        return tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)

    def _insert_ordered(self, entry: TableEntry) -> None:
        """Keep lookup order after one insert without re-sorting (bulk inserts stay linear)."""
        if self.match_type == "lpm":
            plen = entry.key[self._lpm_index].prefix_len
            pos = bisect.bisect_right(self._ordered, -plen, key=lambda e: -e.key[self._lpm_index].prefix_len)
            self._ordered.insert(pos, entry)
            for masks, index in self._lpm_groups:
                if masks == tuple(mk for mk, _, _, _ in entry._m):
                    index.setdefault(tuple(v for _, v, _, _ in entry._m), entry)
                    return
            self._reorder()  # a new prefix length: rebuild the per-length maps
        else:
            pos = bisect.bisect_right(self._ordered, entry.priority, key=lambda e: e.priority)
            self._ordered.insert(pos, entry)

    def _reorder(self) -> None:
        entries = list(self.entries.values())
        if self.match_type == "lpm":
            li = self._lpm_index
            entries.sort(key=lambda e: (-e.key[li].prefix_len, e.handle))
        else:
            entries.sort(key=lambda e: (e.priority, e.handle))
        self._ordered = entries
        if self.match_type == "lpm":
            # one hash map per prefix length, longest first: (masks, {masked key: entry})
            groups: dict[int, tuple[tuple, dict]] = {}
            for e in entries:
                plen = e.key[self._lpm_index].prefix_len
                if plen not in groups:
                    groups[plen] = (tuple(mk for mk, _, _, _ in e._m), {})
                groups[plen][1].setdefault(tuple(v for _, v, _, _ in e._m), e)
            self._lpm_groups = [groups[p] for p in sorted(groups, reverse=True)]
        kinds = [k.match_type for k in self.keys]
        self._ranges = [i for i, k in enumerate(kinds) if k == "range"]

    # -- data path -----------------------------------------------------------------------
    def lookup(self, values: tuple) -> TableEntry | None:
        """The winning entry for the key field values, or None (miss)."""
        if self.match_type == "exact":
            return self._exact.get(values)
        if self.match_type == "lpm":
            for masks, index in self._lpm_groups:
                e = index.get(tuple(map(and_, values, masks)))
                if e is not None:
                    return e
            return None
        return self._tuples.lookup(values)
