"""Switch entities as plain values (what the controller wants installed) and their P4Runtime form.

Values are hashable and compare by content, so desired and installed state can be diffed by
key; :class:`Codec` turns them into ``p4.v1.Entity`` messages and back using a :class:`P4Info`.
Integers are sent as canonical (shortest) byte strings, as P4Runtime specifies.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Union

from p4.v1 import p4runtime_pb2

from controller.errors import ConfigError
from controller.p4info import P4Info


@dataclass(frozen=True)
class Exact:
    """Exact match value."""
    value: int


@dataclass(frozen=True)
class Lpm:
    """Longest-prefix match: value and prefix length."""
    value: int
    prefix_len: int


@dataclass(frozen=True)
class Ternary:
    """Ternary match: value and mask (mask 0 = don't care)."""
    value: int
    mask: int


@dataclass(frozen=True)
class Range:
    """Range match, both ends inclusive."""
    low: int
    high: int


Match = Union[Exact, Lpm, Ternary, Range]


@dataclass(frozen=True)
class Action:
    """An action call: name and parameters as (name, int) pairs."""

    name: str
    params: tuple[tuple[str, int], ...] = ()

    @staticmethod
    def of(name: str, **params: int) -> "Action":
        """An action call with keyword parameters."""
        return Action(name, tuple(sorted(params.items())))

    def param(self, name: str) -> int:
        """The value of parameter ``name``."""
        return dict(self.params)[name]


@dataclass(frozen=True)
class TableEntry:
    """A table entry; the action is a direct :class:`Action` or a member/group id of a profile."""

    table: str
    match: tuple[tuple[str, Match], ...] = ()
    action: Action | None = None
    member_id: int | None = None
    group_id: int | None = None
    priority: int = 0
    is_default: bool = False

    @property
    def key(self) -> tuple:
        """What identifies the entry on the switch (the diff key)."""
        return ("table", self.table, self.match, self.priority, self.is_default)


@dataclass(frozen=True)
class Member:
    """An action profile member."""

    profile: str
    member_id: int
    action: Action

    @property
    def key(self) -> tuple:
        return ("member", self.profile, self.member_id)


@dataclass(frozen=True)
class Group:
    """An action profile group of members (equal weights)."""

    profile: str
    group_id: int
    members: tuple[int, ...]
    max_size: int = 0

    @property
    def key(self) -> tuple:
        return ("group", self.profile, self.group_id)


@dataclass(frozen=True)
class MulticastGroup:
    """A multicast group of the packet replication engine: (port, instance) replicas."""

    group_id: int
    replicas: tuple[tuple[int, int], ...]

    @property
    def key(self) -> tuple:
        return ("mcast", self.group_id)


@dataclass(frozen=True)
class CloneSession:
    """A clone session: its replicas and the truncation length (0 = whole packet)."""

    session_id: int
    replicas: tuple[tuple[int, int], ...]
    packet_length_bytes: int = 0
    class_of_service: int = 0

    @property
    def key(self) -> tuple:
        return ("clone", self.session_id)


ActionProfileMember = Member   # the P4Runtime names
ActionProfileGroup = Group

Entity = Union[TableEntry, Member, Group, MulticastGroup, CloneSession]

# Install order: members before groups before table entries; deletes go the other way.
ORDER = {Member: 0, Group: 1, MulticastGroup: 2, CloneSession: 2, TableEntry: 3}


def _to_bytes(value: int, bitwidth: int, what: str) -> bytes:
    if value < 0 or (bitwidth and value >= (1 << bitwidth)):
        raise ConfigError(f"{what}: value {value} does not fit in {bitwidth} bits")
    if value == 0:
        return b"\x00"
    return value.to_bytes((value.bit_length() + 7) // 8, "big")


def _is_dont_care(m: Match, bitwidth: int) -> bool:
    if isinstance(m, Ternary):
        return m.mask == 0
    if isinstance(m, Range):
        return m.low == 0 and m.high == (1 << bitwidth) - 1
    if isinstance(m, Lpm):
        return m.prefix_len == 0
    return False


def _from_bytes(data: bytes) -> int:
    return int.from_bytes(data, "big")


@dataclass
class Codec:
    """Encodes entities to ``p4.v1.Entity`` and decodes read results, for one P4Info."""

    p4info: P4Info

    # -- encoding ---------------------------------------------------------------------------
    def _action(self, action: Action) -> p4runtime_pb2.Action:
        msg = p4runtime_pb2.Action(action_id=self.p4info.action_id(action.name))
        for name, value in action.params:
            p = self.p4info.param(action.name, name)
            msg.params.add(param_id=p.id,
                           value=_to_bytes(value, p.bitwidth, f"{action.name}({name})"))
        return msg

    def encode(self, entity: Entity) -> p4runtime_pb2.Entity:
        """The P4Runtime form of ``entity``."""
        out = p4runtime_pb2.Entity()
        if isinstance(entity, TableEntry):
            te = out.table_entry
            te.table_id = self.p4info.table_id(entity.table)
            te.priority = entity.priority
            te.is_default_action = entity.is_default
            for name, m in entity.match:
                mf = self.p4info.match_field(entity.table, name)
                if _is_dont_care(m, mf.bitwidth):
                    continue  # P4Runtime: don't-care fields are omitted
                fm = te.match.add(field_id=mf.id)
                what = f"{entity.table} key {name}"
                if isinstance(m, Exact):
                    fm.exact.value = _to_bytes(m.value, mf.bitwidth, what)
                elif isinstance(m, Lpm):
                    fm.lpm.value = _to_bytes(m.value, mf.bitwidth, what)
                    fm.lpm.prefix_len = m.prefix_len
                elif isinstance(m, Ternary):
                    fm.ternary.value = _to_bytes(m.value & m.mask, mf.bitwidth, what)
                    fm.ternary.mask = _to_bytes(m.mask, mf.bitwidth, what)
                elif isinstance(m, Range):
                    fm.range.low = _to_bytes(m.low, mf.bitwidth, what)
                    fm.range.high = _to_bytes(m.high, mf.bitwidth, what)
            if entity.action is not None:
                te.action.action.CopyFrom(self._action(entity.action))
            elif entity.member_id is not None:
                te.action.action_profile_member_id = entity.member_id
            elif entity.group_id is not None:
                te.action.action_profile_group_id = entity.group_id
        elif isinstance(entity, Member):
            m = out.action_profile_member
            m.action_profile_id = self.p4info.action_profile_id(entity.profile)
            m.member_id = entity.member_id
            m.action.CopyFrom(self._action(entity.action))
        elif isinstance(entity, Group):
            g = out.action_profile_group
            g.action_profile_id = self.p4info.action_profile_id(entity.profile)
            g.group_id = entity.group_id
            g.max_size = entity.max_size
            for mid in entity.members:
                g.members.add(member_id=mid, weight=1)
        elif isinstance(entity, MulticastGroup):
            mg = out.packet_replication_engine_entry.multicast_group_entry
            mg.multicast_group_id = entity.group_id
            for port, instance in entity.replicas:
                mg.replicas.add(egress_port=port, instance=instance)
        elif isinstance(entity, CloneSession):
            cs = out.packet_replication_engine_entry.clone_session_entry
            cs.session_id = entity.session_id
            cs.packet_length_bytes = entity.packet_length_bytes
            cs.class_of_service = entity.class_of_service
            for port, instance in entity.replicas:
                cs.replicas.add(egress_port=port, instance=instance)
        else:
            raise TypeError(f"not an entity: {entity!r}")
        return out

    def update(self, kind: str, entity: Entity) -> p4runtime_pb2.Update:
        """A Write update (``kind`` is INSERT, MODIFY or DELETE) for ``entity``."""
        upd = p4runtime_pb2.Update(type=p4runtime_pb2.Update.Type.Value(kind))
        upd.entity.CopyFrom(self.encode(entity))
        return upd

    def wildcard_table(self, table: str) -> p4runtime_pb2.Entity:
        """A read request entity for every entry of ``table``."""
        out = p4runtime_pb2.Entity()
        out.table_entry.table_id = self.p4info.table_id(table)
        return out

    def wildcard_profile(self, profile: str) -> tuple[p4runtime_pb2.Entity, p4runtime_pb2.Entity]:
        """Read request entities for every member and every group of ``profile``."""
        pid = self.p4info.action_profile_id(profile)
        member, group = p4runtime_pb2.Entity(), p4runtime_pb2.Entity()
        member.action_profile_member.action_profile_id = pid
        group.action_profile_group.action_profile_id = pid
        return member, group

    def counter_request(self, counter: str, index: int | None = None) -> p4runtime_pb2.Entity:
        """A read request entity for one cell (or, with ``index=None``, all) of ``counter``."""
        out = p4runtime_pb2.Entity()
        out.counter_entry.counter_id = self.p4info.counter_id(counter)
        if index is not None:
            out.counter_entry.index.index = index
        return out

    def direct_counter_request(self, table: str) -> p4runtime_pb2.Entity:
        """A read request entity for the direct counter cells of every entry of ``table``."""
        out = p4runtime_pb2.Entity()
        out.direct_counter_entry.table_entry.table_id = self.p4info.table_id(table)
        return out

    def decode_counter(self, entity: p4runtime_pb2.Entity) -> tuple[str, int, int, int]:
        """(counter name, index, packets, bytes) of a counter read result."""
        ce = entity.counter_entry
        return (self.p4info.name_of(ce.counter_id), ce.index.index,
                ce.data.packet_count, ce.data.byte_count)

    # -- decoding ---------------------------------------------------------------------------
    def _decode_action(self, msg: p4runtime_pb2.Action) -> Action:
        name = self.p4info.name_of(msg.action_id)
        params = tuple(sorted((self.p4info.param_by_id(name, p.param_id).name, _from_bytes(p.value))
                              for p in msg.params))
        return Action(name, params)

    def decode(self, entity: p4runtime_pb2.Entity) -> Entity:
        """The value form of a read result (table entry, member or group)."""
        kind = entity.WhichOneof("entity")
        if kind == "table_entry":
            te = entity.table_entry
            table = self.p4info.name_of(te.table_id)
            match = []
            for fm in te.match:
                name = self.p4info.match_field_by_id(table, fm.field_id).name
                which = fm.WhichOneof("field_match_type")
                if which == "exact":
                    match.append((name, Exact(_from_bytes(fm.exact.value))))
                elif which == "lpm":
                    match.append((name, Lpm(_from_bytes(fm.lpm.value), fm.lpm.prefix_len)))
                elif which == "ternary":
                    match.append((name, Ternary(_from_bytes(fm.ternary.value),
                                                _from_bytes(fm.ternary.mask))))
                elif which == "range":
                    match.append((name, Range(_from_bytes(fm.range.low),
                                              _from_bytes(fm.range.high))))
            match.sort(key=lambda kv: self.p4info.match_field(table, kv[0]).id)
            act = te.action.WhichOneof("type") if te.HasField("action") else None
            return TableEntry(
                table=table, match=tuple(match), priority=te.priority,
                is_default=te.is_default_action,
                action=self._decode_action(te.action.action) if act == "action" else None,
                member_id=te.action.action_profile_member_id if act == "action_profile_member_id" else None,
                group_id=te.action.action_profile_group_id if act == "action_profile_group_id" else None)
        if kind == "action_profile_member":
            m = entity.action_profile_member
            return Member(self.p4info.name_of(m.action_profile_id), m.member_id,
                          self._decode_action(m.action))
        if kind == "action_profile_group":
            g = entity.action_profile_group
            return Group(self.p4info.name_of(g.action_profile_id), g.group_id,
                         tuple(sorted(m.member_id for m in g.members)), g.max_size)
        if kind == "packet_replication_engine_entry":
            pre = entity.packet_replication_engine_entry
            if pre.HasField("multicast_group_entry"):
                mg = pre.multicast_group_entry
                return MulticastGroup(mg.multicast_group_id,
                                      tuple((r.egress_port, r.instance) for r in mg.replicas))
            cs = pre.clone_session_entry
            return CloneSession(cs.session_id, tuple((r.egress_port, r.instance) for r in cs.replicas),
                                cs.packet_length_bytes, cs.class_of_service)
        raise ConfigError(f"cannot decode a {kind} entity")

    def normalize(self, entity: Entity) -> Entity:
        """``entity`` with its match fields in P4Info order (so it compares equal to reads)."""
        if isinstance(entity, TableEntry):
            fields = {n: self.p4info.match_field(entity.table, n) for n, _ in entity.match}
            match = tuple(sorted(((n, m) for n, m in entity.match
                                  if not _is_dont_care(m, fields[n].bitwidth)),
                                 key=lambda kv: fields[kv[0]].id))
            return TableEntry(entity.table, match, entity.action, entity.member_id,
                              entity.group_id, entity.priority, entity.is_default)
        if isinstance(entity, Group):
            return Group(entity.profile, entity.group_id, tuple(sorted(entity.members)),
                         entity.max_size)
        return entity
