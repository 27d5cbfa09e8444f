"""RECONCILE_AND_COMMIT: carry the runtime state of the running pipeline into a new one.

State is replayed by name onto the new (not yet live) engine: action profile members and
groups, table entries with their counters, meters and default actions, multicast groups,
clone sessions, and counter/meter/register arrays of unchanged size. Anything that no longer
fits the new program makes the whole reconcile fail before the switch changes.
"""
from __future__ import annotations

from p4target.engine import Engine, EngineError

from .errors import invalid
from .state import EntryExtras, PipelineState, ProfileIds
from .translate import Translator


def replay(old: PipelineState, engine: Engine, tr: Translator) -> PipelineState:
    """A PipelineState for `engine` holding `old`'s runtime state; raises INVALID_ARGUMENT if it does not fit."""
    try:
        return _replay(old, engine, tr)
    except EngineError as exc:
        raise invalid(f"cannot reconcile the running state with the new pipeline: {exc}") from None


def _replay(old: PipelineState, engine: Engine, tr: Translator) -> PipelineState:
    new = PipelineState(tr, engine)
    oe = old.engine
    new_profile_ids = {p.name: p.id for p in tr.profiles.values()}
    member_map: dict[str, dict[int, int]] = {}
    group_map: dict[str, dict[int, int]] = {}
    profile_id_map: dict[int, int] = {}
    for pid, ids in old.profiles.items():
        name = old.translator.profiles[pid].name
        if name not in new_profile_ids:
            if ids.members or ids.groups:
                raise invalid(f"cannot reconcile: action profile '{name}' is not in the new P4Info")
            continue
        npid = new_profile_ids[name]
        profile_id_map[pid] = npid
        prof = oe.action_profile(name)
        nids = new.profiles[npid] = ProfileIds()
        mm = member_map[name] = {}
        for mid, h in ids.members.items():
            action, data = prof.members[h]
            nh = engine.act_prof_add_member(name, action, data)
            mm[h] = nh
            nids.members[mid], nids.member_ids[nh] = nh, mid
        gm = group_map[name] = {}
        for gid, h in ids.groups.items():
            nh = engine.act_prof_create_group(name)
            gm[h] = nh
            nids.groups[gid], nids.group_ids[nh] = nh, gid
            nids.group_members[gid] = list(ids.group_members[gid])
            nids.group_max_size[gid] = ids.group_max_size.get(gid, 0)
            for mid in ids.group_members[gid]:
                engine.act_prof_add_member_to_group(name, nids.members[mid], nh)
    for (pid, kind, ident), count in old.refs.items():
        if pid in profile_id_map:
            new.refs[(profile_id_map[pid], kind, ident)] = count
    new_tables = {t.name for t in tr.tables.values()}
    for tinfo in old.translator.tables.values():
        entries = oe.table_entries(tinfo.name)
        ot = oe.table(tinfo.name)
        if tinfo.name not in new_tables:
            if entries and not ot.const_entries:
                raise invalid(f"cannot reconcile: table '{tinfo.name}' is not in the new P4Info")
            continue
        nt = engine.table(tinfo.name)
        if (ot.default_action, ot.default_data) != ot.initial_default and ot.default_action is not None:
            engine.table_set_default(tinfo.name, ot.default_action, ot.default_data)
        if nt.const_entries:
            continue
        profile = ot.profile.name if ot.profile is not None else None
        for e in entries:
            member = member_map[profile][e.member] if e.member is not None and profile else None
            group = group_map[profile][e.group] if e.group is not None and profile else None
            h = engine.table_add(tinfo.name, e.key, e.action if member is None and group is None else None,
                                 e.action_data, e.priority if nt.match_type == "ternary" else None,
                                 member=member, group=group)
            ne = nt.get(h)
            ne.packets, ne.bytes = e.packets, e.bytes
            if e.meter is not None and e.meter.rates is not None and ne.meter is not None:
                ne.meter.set_rates(e.meter.rates, engine.clock_us())
            extras = old.extras.get((tinfo.name, e.handle))
            if extras is not None:
                new.extras[(tinfo.name, h)] = EntryExtras(extras.controller_metadata, extras.metadata,
                                                          extras.idle_timeout_ns)
    for mgrp in oe.mc_groups:
        engine.mc_group_set(mgrp, oe.mc_group_replicas(mgrp))
    for ms in oe.mirror_sessions.values():
        engine.mirroring_add(ms.session, ms.port, ms.truncate, ms.mgrp)
    new.mc_replicas = dict(old.mc_replicas)
    new.clone_sessions = dict(old.clone_sessions)
    _copy_arrays(oe, engine)
    return new


def _copy_arrays(oe: Engine, engine: Engine) -> None:
    """Counter, meter and register cells of arrays present in both programs with equal size."""
    old_p, new_p = oe.program, engine.program
    for name, arr in old_p.counters.items():
        narr = new_p.counters.get(name)
        if narr is not None and narr.size == arr.size:
            narr.packets, narr.bytes = list(arr.packets), list(arr.bytes)
    for name, arr in old_p.meters.items():
        narr = new_p.meters.get(name)
        if narr is not None and narr.size == arr.size and not arr.is_direct:
            for oc, nc in zip(arr.cells, narr.cells):
                if oc.rates is not None:
                    nc.set_rates(oc.rates, engine.clock_us())
    for name, arr in old_p.registers.items():
        narr = new_p.registers.get(name)
        if narr is not None and narr.size == arr.size and narr.bitwidth == arr.bitwidth:
            narr.values = list(arr.values)
