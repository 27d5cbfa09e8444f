"""Translation between P4Info ids / P4Runtime values and the engine's BMv2 names and match values.

P4Info preamble names equal BMv2 JSON names (tables, actions, profiles, counters, meters,
registers, learn lists); a table's match fields map onto the BMv2 JSON key list by name,
else by position (p4c emits both in the table's key order).

Values of ``@p4runtime_translation`` types are not translated, as in simple_switch_grpc (PI):
they must fit the P4Info (controller) width, 0 bits for a string translation, and reach the
data plane cut to its field width; a table whose key has a field of another byte width than
its data-plane field takes no entries, as BMv2 rejects PI's key of the controller's width.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from p4target.engine import Engine, Exact, Lpm, Optional, Range, Ternary, Valid
from p4target.engine.match import MatchValue

from . import bytestrings
from .errors import Code, P4RuntimeError, invalid, not_found

MF = p4info_pb2.MatchField
BMV2_MAX_PRIORITY = 2**31 - 1  # P4Runtime priority p (higher wins) <-> BMv2 MAX - p (lower wins)
_KIND_NAMES = {MF.EXACT: "exact", MF.LPM: "lpm", MF.TERNARY: "ternary", MF.RANGE: "range",
               MF.OPTIONAL: "optional"}


@dataclass
class FieldInfo:
    """A match field: P4Info id/name/width/match type, its engine key kind and the data-plane
    width (``dp_width``; other than ``bitwidth`` for translated types)."""
    id: int
    name: str
    bitwidth: int
    match_type: int
    engine_kind: str
    dp_width: int = 0
    type_name: str = ""

    def __post_init__(self) -> None:
        self.dp_width = self.dp_width or self.bitwidth


@dataclass
class ParamInfo:
    """An action parameter: P4Info id/name/width and the data-plane width (as FieldInfo)."""
    id: int
    name: str
    bitwidth: int
    dp_width: int = 0
    type_name: str = ""

    def __post_init__(self) -> None:
        self.dp_width = self.dp_width or self.bitwidth


@dataclass
class ActionInfo:
    id: int
    name: str
    params: list[ParamInfo]
    params_by_id: dict[int, int] = field(default_factory=dict)  # param id -> position


@dataclass
class TableInfo:
    id: int
    name: str
    fields: list[FieldInfo]
    fields_by_id: dict[int, int]  # field id -> position
    action_scopes: dict[int, int]  # action id -> ActionRef scope
    const_default_action_id: int
    profile_id: int  # implementation_id (0: direct table)
    direct_counter_id: int = 0
    direct_meter_id: int = 0
    is_const: bool = False
    needs_priority: bool = False
    supports_idle_timeout: bool = False


@dataclass
class ProfileInfo:
    id: int
    name: str
    table_ids: list[int]
    with_selector: bool
    size: int
    max_group_size: int


@dataclass
class ResourceInfo:
    """A counter, meter or register array (direct ones carry their table id)."""
    id: int
    name: str
    kind: str  # counter | direct_counter | meter | direct_meter | register
    size: int = 0
    unit: int = 0
    direct_table_id: int = 0
    bitwidth: int = 0


@dataclass
class ValueSetInfo:
    """A parser value set: its match fields (id, bitwidth, match type) in P4Info order."""
    id: int
    name: str
    size: int
    fields: list[tuple[int, int, int]]


@dataclass
class DigestInfo:
    id: int
    name: str
    widths: list[int]
    is_struct: bool


@dataclass
class ControllerHeader:
    """packet_in / packet_out metadata: (id, name, bitwidth) in header order."""
    name: str
    fields: list[tuple[int, str, int]]


class Translator:
    """Index of one P4Info checked against the engine program it describes."""

    def __init__(self, p4info: p4info_pb2.P4Info, engine: Engine) -> None:
        self.p4info = p4info
        self.actions: dict[int, ActionInfo] = {}
        self.tables: dict[int, TableInfo] = {}
        self.profiles: dict[int, ProfileInfo] = {}
        self.resources: dict[int, ResourceInfo] = {}
        self.value_sets: dict[int, ValueSetInfo] = {}
        self.digests: dict[int, DigestInfo] = {}
        self.controller_headers: dict[str, ControllerHeader] = {}
        self._by_name: dict[tuple[str, str], int] = {}
        if engine.program is None:
            raise P4RuntimeError(Code.FAILED_PRECONDITION, "no program is loaded")
        self._index_actions(engine)
        self._index_tables(engine)
        self._index_resources(engine)
        self._index_digests(engine)
        for cpm in p4info.controller_packet_metadata:
            self.controller_headers[cpm.preamble.name] = ControllerHeader(
                cpm.preamble.name, [(m.id, m.name, m.bitwidth) for m in cpm.metadata])

    # -- indexing ------------------------------------------------------------------------
    def _index_actions(self, engine: Engine) -> None:
        json_actions = {a["name"]: a for a in engine.program.json.get("actions", [])}
        in_tables = {ref.id for t in self.p4info.tables for ref in t.action_refs}
        for a in self.p4info.actions:
            name = a.preamble.name
            ja = json_actions.get(name)
            if ja is None and a.preamble.id in in_tables:
                raise invalid(f"P4Info action '{name}' is not in the BMv2 JSON")
            # an action only called directly from control code may be inlined in the JSON
            if ja is not None and len(ja.get("runtime_data", [])) != len(a.params):
                raise invalid(f"P4Info action '{name}' has {len(a.params)} parameter(s), "
                              f"the BMv2 JSON {len(ja.get('runtime_data', []))}")
            dp_widths = [int(rd["bitwidth"]) for rd in ja.get("runtime_data", [])] if ja else [0] * len(a.params)
            info = ActionInfo(a.preamble.id, name, [ParamInfo(p.id, p.name, p.bitwidth, w, p.type_name.name)
                                                    for p, w in zip(a.params, dp_widths)])
            info.params_by_id = {p.id: i for i, p in enumerate(a.params)}
            self.actions[info.id] = info
            self._by_name[("action", name)] = info.id

    def _index_tables(self, engine: Engine) -> None:
        for t in self.p4info.tables:
            name = t.preamble.name
            try:
                et = engine.table(name)
            except Exception:
                raise invalid(f"P4Info table '{name}' is not in the BMv2 JSON") from None
            if len(et.keys) != len(t.match_fields):
                raise invalid(f"P4Info table '{name}' has {len(t.match_fields)} match field(s), "
                              f"the BMv2 JSON {len(et.keys)}")
            by_name = {k.name: i for i, k in enumerate(et.keys)}
            fields: list[FieldInfo | None] = [None] * len(et.keys)
            for pos, mf in enumerate(t.match_fields):
                i = by_name.get(mf.name, pos)
                if fields[i] is not None:
                    i = pos
                fields[i] = FieldInfo(mf.id, mf.name, mf.bitwidth, mf.match_type, et.keys[i].match_type,
                                      et.keys[i].width, mf.type_name.name)
            flist = [f for f in fields if f is not None]
            for f in flist:
                if f.match_type not in _KIND_NAMES:
                    raise invalid(f"table '{name}' field '{f.name}': unsupported match type")
            for ref in t.action_refs:
                if ref.id not in self.actions:
                    raise invalid(f"table '{name}' refers to unknown action id {ref.id}")
            info = TableInfo(
                id=t.preamble.id, name=name, fields=flist,
                fields_by_id={f.id: i for i, f in enumerate(flist)},
                action_scopes={r.id: r.scope for r in t.action_refs},
                const_default_action_id=t.const_default_action_id,
                profile_id=t.implementation_id, is_const=t.is_const_table,
                needs_priority=et.match_type == "ternary",
                supports_idle_timeout=t.idle_timeout_behavior == p4info_pb2.Table.NOTIFY_CONTROL)
            self.tables[info.id] = info
            self._by_name[("table", name)] = info.id
        for p in self.p4info.action_profiles:
            try:
                engine.action_profile(p.preamble.name)
            except Exception:
                raise invalid(f"P4Info action profile '{p.preamble.name}' is not in the BMv2 JSON") from None
            self.profiles[p.preamble.id] = ProfileInfo(p.preamble.id, p.preamble.name, list(p.table_ids),
                                                       p.with_selector, p.size, p.max_group_size)
        for t in self.tables.values():
            if t.profile_id and t.profile_id not in self.profiles:
                raise invalid(f"table '{t.name}' uses unknown action profile id {t.profile_id}")

    def _index_resources(self, engine: Engine) -> None:
        def check(kind: str, name: str, getter) -> None:
            try:
                getter(name)
            except Exception:
                raise invalid(f"P4Info {kind} '{name}' is not in the BMv2 JSON") from None

        for c in self.p4info.counters:
            check("counter", c.preamble.name, engine.counter)
            self.resources[c.preamble.id] = ResourceInfo(c.preamble.id, c.preamble.name, "counter",
                                                         size=c.size, unit=c.spec.unit)
        for c in self.p4info.direct_counters:
            self._direct(c, "direct_counter")
            self.tables[c.direct_table_id].direct_counter_id = c.preamble.id
        for m in self.p4info.meters:
            check("meter", m.preamble.name, engine.meter)
            self.resources[m.preamble.id] = ResourceInfo(m.preamble.id, m.preamble.name, "meter",
                                                         size=m.size, unit=m.spec.unit)
        for m in self.p4info.direct_meters:
            self._direct(m, "direct_meter")
            self.tables[m.direct_table_id].direct_meter_id = m.preamble.id
        for vs in self.p4info.value_sets:
            check("value set", vs.preamble.name, engine.parse_vset)
            self.value_sets[vs.preamble.id] = ValueSetInfo(
                vs.preamble.id, vs.preamble.name, vs.size,
                [(m.id, m.bitwidth, m.match_type) for m in vs.match])
        for r in self.p4info.registers:
            check("register", r.preamble.name, engine.register)
            width = engine.register(r.preamble.name).bitwidth
            self.resources[r.preamble.id] = ResourceInfo(r.preamble.id, r.preamble.name, "register",
                                                         size=r.size, bitwidth=width)

    def _direct(self, res, kind: str) -> None:
        if res.direct_table_id not in self.tables:
            raise invalid(f"P4Info {kind} '{res.preamble.name}' is bound to unknown table id {res.direct_table_id}")
        self.resources[res.preamble.id] = ResourceInfo(res.preamble.id, res.preamble.name, kind,
                                                       unit=res.spec.unit, direct_table_id=res.direct_table_id)

    def _index_digests(self, engine: Engine) -> None:
        prog = engine.program
        lists = {name: [prog.field_width[i] for i in idxs] for name, idxs in prog.learn_lists.values()}
        ordered = list(lists)
        for pos, d in enumerate(self.p4info.digests):
            widths = lists.get(d.preamble.name)
            if widths is None and len(ordered) == len(self.p4info.digests):
                widths = lists[ordered[pos]]  # learn list named differently: match by order
            if widths is None:
                raise invalid(f"P4Info digest '{d.preamble.name}' has no BMv2 learn list")
            self.digests[d.preamble.id] = DigestInfo(d.preamble.id, d.preamble.name, widths,
                                                     not d.type_spec.HasField("bitstring"))
            self._by_name[("digest", d.preamble.name)] = d.preamble.id
            if d.preamble.name not in lists:
                self._by_name[("digest", ordered[pos])] = d.preamble.id

    # -- look-ups ------------------------------------------------------------------------
    def table(self, table_id: int) -> TableInfo:
        t = self.tables.get(table_id)
        if t is None:
            raise not_found(f"unknown table id {table_id}")
        return t

    def action(self, action_id: int) -> ActionInfo:
        a = self.actions.get(action_id)
        if a is None:
            raise invalid(f"unknown action id {action_id}")
        return a

    def profile(self, profile_id: int) -> ProfileInfo:
        p = self.profiles.get(profile_id)
        if p is None:
            raise not_found(f"unknown action profile id {profile_id}")
        return p

    def resource(self, res_id: int, kind: str) -> ResourceInfo:
        r = self.resources.get(res_id)
        if r is None or r.kind != kind:
            raise not_found(f"unknown {kind.replace('_', ' ')} id {res_id}")
        return r

    def value_set(self, vs_id: int) -> ValueSetInfo:
        vs = self.value_sets.get(vs_id)
        if vs is None:
            raise not_found(f"unknown value set id {vs_id}")
        return vs

    def resources_of(self, kind: str) -> list[ResourceInfo]:
        return [r for r in self.resources.values() if r.kind == kind]

    def digest_by_learn_list(self, name: str) -> DigestInfo | None:
        did = self._by_name.get(("digest", name))
        return self.digests.get(did) if did is not None else None

    def action_id_of(self, name: str) -> int:
        aid = self._by_name.get(("action", name))
        if aid is None:
            raise not_found(f"action '{name}' is not in the P4Info")
        return aid

    # -- match keys ----------------------------------------------------------------------
    def key_to_engine(self, table: TableInfo, matches) -> list[MatchValue]:
        """Engine key (one value per BMv2 key field) of a P4Runtime FieldMatch list."""
        given: dict[int, p4runtime_pb2.FieldMatch] = {}
        for fm in matches:
            pos = table.fields_by_id.get(fm.field_id)
            if pos is None:
                raise invalid(f"table '{table.name}' has no match field id {fm.field_id}")
            if pos in given:
                raise invalid(f"table '{table.name}': match field id {fm.field_id} given twice")
            given[pos] = fm
        return [self._field_to_engine(table, f, given.get(i)) for i, f in enumerate(table.fields)]

    def check_key_widths(self, table: TableInfo) -> None:
        """BMv2 takes PI's match key at the P4Info widths: a field of another byte width than
        its data-plane field (a translated type) fails every insert (UNKNOWN, as PI reports)."""
        for f in table.fields:
            if (f.bitwidth + 7) // 8 != (f.dp_width + 7) // 8:
                raise P4RuntimeError(Code.UNKNOWN, (
                    f"Error when adding match entry to target: table '{table.name}' field '{f.name}' "
                    f"is {f.bitwidth} bits in the P4Info{_of_type(f.type_name)} but {f.dp_width} bits "
                    "in the data plane; like simple_switch_grpc, the switch does not translate "
                    "P4Runtime values"))

    def _field_to_engine(self, table: TableInfo, f: FieldInfo, fm) -> MatchValue:
        w, full = f.bitwidth, (1 << f.dp_width) - 1
        what = f"table '{table.name}' field '{f.name}'"
        kind = fm.WhichOneof("field_match_type") if fm is not None else None
        expected = _KIND_NAMES[f.match_type]
        if kind is not None and kind != expected:
            raise invalid(f"{what} is {expected}, got a {kind} match")
        if kind is not None:
            _check_not_string(w, what, f.type_name)
        if f.match_type == MF.EXACT:
            if kind is None:
                raise invalid(f"{what}: exact match fields cannot be omitted")
            v = bytestrings.decode(fm.exact.value, w, what) & full
            return Valid(bool(v)) if f.engine_kind == "valid" else Exact(v)
        if f.match_type == MF.LPM:
            if kind is None:
                return Lpm(0, 0)
            plen = fm.lpm.prefix_len
            if plen == 0:
                raise invalid(f"{what}: a /0 LPM match must be omitted (don't care)")
            if not 0 < plen <= w:
                raise invalid(f"{what}: prefix length {plen} out of range for {w} bits")
            v = bytestrings.decode(fm.lpm.value, w, what)
            if v & ((1 << (w - plen)) - 1):
                raise invalid(f"{what}: LPM value has bits set beyond the /{plen} prefix")
            if plen > f.dp_width:
                raise P4RuntimeError(Code.UNKNOWN, f"Error when adding match entry to target: {what}: "
                                                   f"prefix /{plen} is longer than the {f.dp_width}-bit field")
            return Lpm(v & full, plen)
        if f.match_type == MF.TERNARY:
            if kind is None:
                return Ternary(0, 0)
            v = bytestrings.decode(fm.ternary.value, w, what)
            mask = bytestrings.decode(fm.ternary.mask, w, what + " mask")
            if mask == 0:
                raise invalid(f"{what}: an all-zero ternary mask must be omitted (don't care)")
            if v & ~mask:
                raise invalid(f"{what}: ternary value has bits set outside the mask")
            return Ternary(v & full, mask & full)
        if f.match_type == MF.RANGE:
            if kind is None:
                return Range(0, full)
            lo = bytestrings.decode(fm.range.low, w, what + " low")
            hi = bytestrings.decode(fm.range.high, w, what + " high")
            if lo > hi:
                raise invalid(f"{what}: range low {lo} is above high {hi}")
            if lo == 0 and hi == (1 << w) - 1:
                raise invalid(f"{what}: a full range must be omitted (don't care)")
            return Range(lo & full, hi & full)
        # optional
        if kind is None:
            return Ternary(0, 0) if f.engine_kind == "ternary" else Optional(0, True)
        v = bytestrings.decode(fm.optional.value, w, what) & full
        return Ternary(v, full) if f.engine_kind == "ternary" else Optional(v)

    def key_from_engine(self, table: TableInfo, key: tuple, out) -> None:
        """Append the P4Runtime FieldMatch list of an engine entry key to the repeated field
        `out` (don't-care fields omitted); filled in place, which matters with pure-Python
        protobuf."""
        for f, v in zip(table.fields, key):
            if isinstance(v, int):
                v = Exact(v)
            mt = f.match_type
            if mt == MF.EXACT:
                out.add(field_id=f.id).exact.value = bytestrings.encode(int(v.valid) if isinstance(v, Valid) else v.value)
            elif mt == MF.LPM:
                if v.prefix_len:
                    lpm = out.add(field_id=f.id).lpm
                    lpm.value, lpm.prefix_len = bytestrings.encode(v.value), v.prefix_len
            elif mt == MF.TERNARY:
                if v.mask:
                    tern = out.add(field_id=f.id).ternary
                    tern.value, tern.mask = bytestrings.encode(v.value), bytestrings.encode(v.mask)
            elif mt == MF.RANGE:
                if v.low != 0 or v.high != (1 << f.dp_width) - 1:
                    rng = out.add(field_id=f.id).range
                    rng.low, rng.high = bytestrings.encode(v.low), bytestrings.encode(v.high)
            elif not ((isinstance(v, Ternary) and v.mask == 0) or (isinstance(v, Optional) and v.wildcard)):
                out.add(field_id=f.id).optional.value = bytestrings.encode(v.value)

    # -- priorities ----------------------------------------------------------------------
    @staticmethod
    def priority_to_engine(table: TableInfo, priority: int) -> int | None:
        if table.needs_priority:
            if priority <= 0:
                raise invalid(f"table '{table.name}' needs a priority > 0 (ternary/range/optional keys)")
            return BMV2_MAX_PRIORITY - priority
        if priority != 0:
            raise invalid(f"table '{table.name}' has no ternary/range/optional keys: priority must be 0")
        return None

    @staticmethod
    def priority_from_engine(table: TableInfo, priority: int) -> int:
        return BMV2_MAX_PRIORITY - priority if table.needs_priority else 0

    # -- actions -------------------------------------------------------------------------
    def action_to_engine(self, action: p4runtime_pb2.Action) -> tuple[str, list[int]]:
        """(BMv2 action name, action data) of a P4Runtime Action, parameters checked."""
        info = self.action(action.action_id)
        values: list[int | None] = [None] * len(info.params)
        for p in action.params:
            pos = info.params_by_id.get(p.param_id)
            if pos is None:
                raise invalid(f"action '{info.name}' has no parameter id {p.param_id}")
            if values[pos] is not None:
                raise invalid(f"action '{info.name}': parameter id {p.param_id} given twice")
            spec = info.params[pos]
            what = f"action '{info.name}' parameter '{spec.name}'"
            _check_not_string(spec.bitwidth, what, spec.type_name)
            values[pos] = bytestrings.decode(p.value, spec.bitwidth, what) & ((1 << spec.dp_width) - 1)
        missing = [info.params[i].name for i, v in enumerate(values) if v is None]
        if missing:
            raise invalid(f"action '{info.name}': missing parameter(s) {', '.join(missing)}")
        return info.name, [int(v) for v in values]  # type: ignore[arg-type]

    def action_from_engine(self, name: str, data: tuple, out: p4runtime_pb2.Action) -> None:
        """Fill the P4Runtime Action `out` from an engine action name and data."""
        info = self.actions[self.action_id_of(name)]
        out.action_id = info.id
        for spec, value in zip(info.params, data):
            out.params.add(param_id=spec.id, value=bytestrings.encode(value))

    def check_table_action(self, table: TableInfo, action_id: int, default: bool) -> None:
        scope = table.action_scopes.get(action_id)
        if scope is None:
            raise invalid(f"action id {action_id} is not an action of table '{table.name}'")
        if default and scope == p4info_pb2.ActionRef.TABLE_ONLY:
            raise invalid(f"action id {action_id} cannot be the default action of '{table.name}' (@tableonly)")
        if not default and scope == p4info_pb2.ActionRef.DEFAULT_ONLY:
            raise invalid(f"action id {action_id} can only be the default action of '{table.name}' (@defaultonly)")


def _of_type(type_name: str) -> str:
    return f" (type '{type_name}')" if type_name else ""


def _check_not_string(bitwidth: int, what: str, type_name: str) -> None:
    """A 0-bit P4Info value is a string translation, which simple_switch_grpc does not
    support: PI rejects every value as not fitting within 0 bits."""
    if bitwidth == 0:
        raise invalid(f"{what}: bytestring provided does not fit within 0 bits{_of_type(type_name)}: "
                      "string translations (@p4runtime_translation(..., string)) are not supported, "
                      "as in simple_switch_grpc")
