"""Match tables and action profiles (BMv2: `MatchTable`, `MatchTableIndirect(WS)`,
`ActionProfile`): runtime objects plus the compiled node that applies a table to a packet."""
from __future__ import annotations

from typing import Any, Callable

from .. import match as mm
from ..errors import ProgramLoadError
from ..externs import MeterArray
from ..packet import PacketState
from ..tables import ActionProfile, ActionSpec, KeyField, Table
from .calculations import Calculations
from .codegen import Namespace
from .layout import Layout


class ProgramActions:
    """The actions of a program, by JSON id and by name."""

    def __init__(self) -> None:
        self.by_id: dict[int, ActionSpec] = {}
        self.by_name: dict[str, ActionSpec] = {}

    def add(self, spec: ActionSpec) -> None:
        self.by_id[spec.id] = spec
        # p4c may emit several actions with one name (e.g. NoAction copies); keep the first
        self.by_name.setdefault(spec.name, spec)

    def get(self, action_id: Any, where: str) -> ActionSpec:
        if type(action_id) is not int or action_id not in self.by_id:
            raise ProgramLoadError(f"{where}: unknown action id {action_id!r:.40}")
        return self.by_id[action_id]

    def named(self, name: Any, where: str) -> ActionSpec:
        if type(name) is not str or name not in self.by_name:
            raise ProgramLoadError(f"{where}: unknown action {name!r:.60}")
        return self.by_name[name]


def build_profile(prof: dict, calcs: Calculations) -> ActionProfile:
    """An action profile; with a selector, its hash function over the selector's inputs."""
    sel = prof.get("selector")
    selector = calcs.selector(sel) if sel else None
    return ActionProfile(prof["name"], {}, prof.get("max_size", 0), selector)


def table_actions(t: dict, actions: ProgramActions) -> dict[str, ActionSpec]:
    """A table's actions by name: from `action_ids`, or, as older compilers wrote tables (and
    BMv2 falls back on), from the names in `actions`."""
    where = f"table '{t['name']}'"
    if "action_ids" in t:
        specs = [actions.get(aid, where) for aid in t["action_ids"]]
    else:
        specs = [actions.named(name, where) for name in t.get("actions", [])]
    return {spec.name: spec for spec in specs}


class TableBuilder:
    """Builds a program's tables: runtime `Table` objects and their apply nodes."""

    def __init__(self, j: dict, layout: Layout, actions: ProgramActions, meters: dict[str, MeterArray],
                 profiles: dict[str, ActionProfile], calcs: Calculations, ns: Namespace) -> None:
        self.layout = layout
        self.calcs = calcs
        self.actions = actions
        self.meters = meters
        self.profiles = profiles
        self.ns = ns
        self.tables: dict[str, Table] = {}
        self.direct_counters = {c["binding"]: c for c in j.get("counter_arrays", []) if c.get("is_direct")}
        self.direct_meters = {m["binding"]: m for m in j.get("meter_arrays", []) if m.get("is_direct")}
        self.meter_arrays = {m["name"]: m for m in j.get("meter_arrays", [])}

    def _keys(self, t: dict) -> tuple[list[KeyField], list[str]]:
        lay = self.layout
        keys: list[KeyField] = []
        getters = []
        for k in t.get("key", []):
            mt = k["match_type"]
            target = k["target"]
            if mt == "valid":
                hname = target if isinstance(target, str) else target[0]
                getters.append(f"V[{lay.hid(hname)}]")
                keys.append(KeyField(mt, k.get("name", hname), 1))
                continue
            if target[1] == "$valid$":  # p4c's form of `hdr.x.isValid(): exact`
                getters.append(f"V[{lay.hid(target[0])}]")
                keys.append(KeyField(mt, k.get("name", f"{target[0]}.$valid$"), 1))
                continue
            i = lay.fidx(target)
            w = lay.field_width[i]
            mask = k.get("mask")
            getters.append(f"(F[{i}] & {int(mask, 16)})" if mask else f"F[{i}]")
            keys.append(KeyField(mt, k.get("name", f"{target[0]}.{target[1]}"), w))
        return keys, getters

    def _profile(self, t: dict) -> ActionProfile | None:
        """An indirect table's action profile: named in `action_profile`, or, in the older
        format BMv2 still reads, declared by the table itself (`act_prof_name`, `selector`)."""
        if t.get("type", "simple") == "simple":
            return None
        if "action_profile" in t:
            return self.profiles[t["action_profile"]]
        name = t["act_prof_name"]
        self.profiles[name] = build_profile({"name": name, "max_size": t.get("max_size", 0),
                                             "selector": t.get("selector") if t["type"] == "indirect_ws" else None},
                                            self.calcs)
        return self.profiles[name]

    @staticmethod
    def _const_key(keys: list[KeyField], match_key: list[dict]) -> list[mm.MatchValue]:
        key: list[mm.MatchValue] = []
        for _kf, mk in zip(keys, match_key):
            kt = mk["match_type"]
            if kt == "exact":
                key.append(mm.Exact(int(mk["key"], 16)))
            elif kt == "lpm":
                key.append(mm.Lpm(int(mk["key"], 16), mk["prefix_length"]))
            elif kt == "ternary":
                key.append(mm.Ternary(int(mk["key"], 16), int(mk["mask"], 16)))
            elif kt == "range":
                key.append(mm.Range(int(mk["start"], 16), int(mk["end"], 16)))
            elif kt == "optional":
                if mk.get("mask") and int(mk["mask"], 16) == 0:
                    key.append(mm.Optional(0, True))
                else:
                    key.append(mm.Optional(int(mk["key"], 16)))
            elif kt == "valid":
                key.append(mm.Valid(bool(int(mk["key"], 16))))
            else:
                raise ProgramLoadError(f"unsupported const entry match type '{kt}'")
        return key

    def build(self, t: dict) -> Callable[[PacketState], str | None]:
        """The table's runtime object (kept in `tables`) and its apply node `(P) -> next node`."""
        keys, getters = self._keys(t)
        where = f"table '{t['name']}'"
        actions = table_actions(t, self.actions)
        profile = self._profile(t)
        if profile is not None:
            profile.actions.update(actions)
        dm = self.direct_meters.get(t["name"])
        if t.get("direct_meters"):
            dm = self.meter_arrays.get(t["direct_meters"], dm)
        dmeter = self.meters[dm["name"]] if dm is not None else None
        table = Table(t["name"], keys, actions, t.get("max_size", 0), t.get("type", "simple"), profile,
                      bool(t.get("with_counters")) or t["name"] in self.direct_counters, dmeter)
        self.tables[t["name"]] = table
        de = t.get("default_entry")
        if de:
            spec = self.actions.get(de["action_id"], f"{where} default_entry")
            table.default_action = spec.name
            table.default_data = tuple(int(x, 16) for x in de.get("action_data", []))
            table.default_const = bool(de.get("action_const"))
            table.initial_default = (table.default_action, table.default_data)
        for ent in t.get("entries", []):
            ae = ent["action_entry"]
            spec = self.actions.get(ae["action_id"], f"{where} entries")
            table.add(self._const_key(keys, ent["match_key"]), spec.name,
                      [int(x, 16) for x in ae.get("action_data", [])],
                      ent.get("priority") if table.match_type == "ternary" else None)
        table.const_entries = bool(t.get("entries"))
        getter = self.ns.compile_fn("key", "P", [f"return ({', '.join(getters)}{',' if getters else ''})"])
        result_target = self.layout.fidx(dm["result_target"]) if dm is not None and dm.get("result_target") else None
        return _apply_node(table, getter, actions, self.actions.by_name, t, result_target)


def _apply_node(table: Table, getter: Callable, acts: dict[str, ActionSpec], all_actions: dict[str, ActionSpec],
                t: dict, result_target: int | None) -> Callable[[PacketState], str | None]:
    nt = t.get("next_tables", {})
    hit_next, miss_next = nt.get("__HIT__"), nt.get("__MISS__")
    by_hit = "__HIT__" in nt or "__MISS__" in nt
    base_next = t.get("base_default_next")
    next_by_action = {name: nt.get(name, base_next) for name in acts}
    counting = table.with_counters
    profile_ = table.profile

    def apply(P: PacketState):
        e = table.lookup(getter(P))
        if e is not None:
            if counting:
                e.packets += 1
                e.bytes += P.length
            if e.meter is not None and result_target is not None:
                P.F[result_target] = e.meter.execute(1 if table.direct_meter.type == "packets" else P.length,
                                                     P.now_us)
            if profile_ is None:
                name, data = e.action, e.action_data
            elif e.member is not None:
                name, data = profile_.members[e.member]
            else:
                mbrs = profile_.groups.get(e.group) or []
                if not mbrs:
                    name, data = table.default_action, table.default_data
                else:
                    h = profile_.selector(P) if profile_.selector else 0
                    name, data = profile_.members[mbrs[h % len(mbrs)]]
            acts[name].fn(P, data)
            if by_hit:
                return hit_next
            return next_by_action.get(name, base_next)
        if counting:
            table.default_packets += 1
            table.default_bytes += P.length
        name = table.default_action
        if name is not None:
            acts[name].fn(P, table.default_data) if name in acts else all_actions[name].fn(P, table.default_data)
        if by_hit:
            return miss_next
        return next_by_action.get(name, base_next) if name is not None else base_next
    return apply
