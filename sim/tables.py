"""The controller's entries for one switch, loaded into the simulated switch's C++ tables.

The entries are exactly what the controller installs on a BMv2 switch: the network layer's
(`controller.network.plan_switch`: routes with their equal-cost groups, DSCP classes, ECN/PCN
thresholds per port) and the policy's (`controller.policy.translate`: gradient classes with
their slots, bounds and thresholds, job ablation switches, per-job PCN thresholds, DDL flows). Routes go
to the switch's routing (`routes`, then `sim.network`); ARP answers are not needed (ns-3's
point-to-point links have no ARP).
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from controller import p4names as N
from controller.entries import Entity, Exact, Group, Lpm, Member, Range, TableEntry, Ternary
from controller.network import NetworkOptions, plan_switch
from controller.policy import Policy, assign_slots, translate
from controller.topology import Topology
from sim.errors import SimError

FORWARDING_TABLES = {N.ARP_TABLE, N.ROUTE_TABLE}


def routes(entities: Sequence[Entity]) -> list[tuple[int, tuple[int, ...]]]:
    """(destination IPv4 as an int, its member ports) of every /32 route among `entities`."""
    ports = {e.member_id: e.action.param(N.SET_NHOP_PORT) for e in entities if isinstance(e, Member)}
    groups = {e.group_id: tuple(ports[m] for m in e.members) for e in entities if isinstance(e, Group)}
    out = []
    for e in entities:
        if isinstance(e, TableEntry) and e.table == N.ROUTE_TABLE:
            dst = dict(e.match)[N.ROUTE_KEY_DST]
            if not isinstance(dst, Lpm) or dst.prefix_len != 32:
                raise SimError(f"route {dst!r}: only /32 host routes are simulated")
            out.append((dst.value, groups[e.group_id] if e.group_id is not None else (ports[e.member_id],)))
    return out


@dataclass
class LoadReport:
    """How many entries of each table went into the simulated switch, and what was skipped."""

    loaded: dict[str, int] = field(default_factory=dict)
    forwarding: int = 0


def switch_entries(topo: Topology, switch: str, policy: Policy,
                   options: NetworkOptions = NetworkOptions()) -> list[Entity]:
    """Every entity the controller would install on `switch` for this topology and policy."""
    return [*plan_switch(topo, switch, options).entities, *translate(policy, assign_slots(policy))]


def _match(entry: TableEntry) -> dict[str, Any]:
    return dict(entry.match)


def _ternary(m: Any, width: int) -> tuple[int, int]:
    if m is None:
        return 0, 0
    if isinstance(m, Ternary):
        return m.value, m.mask
    if isinstance(m, Exact):
        return m.value, (1 << width) - 1
    raise SimError(f"unexpected match {m!r} where a ternary key was expected")


def _range(m: Any, top: int) -> tuple[int, int]:
    if m is None:
        return 0, top
    if isinstance(m, Range):
        return m.low, m.high
    if isinstance(m, Exact):
        return m.value, m.value
    raise SimError(f"unexpected match {m!r} where a range key was expected")


def _host_address(m: Any, addresses: Mapping[int, int]) -> tuple[int, int]:
    """A ddl_flow address key in simulated addresses: a host's /32 becomes that host's address
    in ns-3 (whose links number hosts their own way); any other prefix cannot be expressed."""
    value, mask = _ternary(m, 32)
    if mask == 0:
        return 0, 0
    if mask != 0xFFFFFFFF or value not in addresses:
        raise SimError(f"ddl_flow key {ipaddress.IPv4Address(value)}/{mask.bit_count()}: only a host's "
                       "own address (/32) or any address is simulated")
    return addresses[value], mask


def load(state: Any, entities: Sequence[Entity], cpp: Any,
         addresses: Mapping[int, int] | None = None) -> LoadReport:
    """Fill the C++ `SwitchState` from `entities`; SimError on an entry it cannot express.
    `addresses`: each host's topology address -> its simulated one (ddl_flow keys)."""
    report = LoadReport()
    for entity in entities:
        if not isinstance(entity, TableEntry) or entity.table in FORWARDING_TABLES:   # see routes()
            report.forwarding += 1
            continue
        match, action = _match(entity), entity.action
        if action is None:
            raise SimError(f"{entity.table}: entries without a direct action are not simulated")
        if entity.table == N.CLASS_TABLE:
            rule = cpp.ClassRule()
            rule.job_value, rule.job_mask = _ternary(match.get(N.CLASS_KEY_JOB), N.JOB_ID_BITS)
            rule.layer_lo, rule.layer_hi = _range(match.get(N.CLASS_KEY_LAYER), N.LAYER_ID_MAX)
            rule.mag_lo, rule.mag_hi = _range(match.get(N.CLASS_KEY_MAG), N.MAG_CLASS_MAX)
            rule.epoch_value, rule.epoch_mask = _ternary(match.get(N.CLASS_KEY_EPOCH), 8)
            rule.entry_priority = entity.priority
            rule.prio = action.param(N.SET_CLASS_PRIO)
            rule.eligible = action.param(N.SET_CLASS_ELIGIBLE)
            rule.slot = action.param(N.SET_CLASS_SLOT)
            rule.push_bp = action.param(N.SET_CLASS_PUSH_BOUND)
            rule.pull_bp = action.param(N.SET_CLASS_PULL_BOUND)
            rule.drop_threshold = action.param(N.SET_CLASS_DROP_THRESHOLD)
            state.AddClassRule(rule)
        elif entity.table == N.DSCP_TABLE:
            rule = cpp.DscpRule()
            rule.value, rule.mask = _ternary(match.get(N.DSCP_KEY), 6)
            rule.entry_priority = entity.priority
            rule.prio = action.param(N.SET_DSCP_PRIO)
            rule.drop_threshold = action.param(N.SET_DSCP_DROP_THRESHOLD)
            state.AddDscpRule(rule)
        elif entity.table == N.ECN_TABLE:
            port = match[N.ECN_KEY_PORT]
            state.SetEcn(port.value, action.param(N.SET_ECN_NORMAL), action.param(N.SET_ECN_PCN))
        elif entity.table == N.ECN_DEPTH_TABLE:
            state.SetMarkOnPortOccupancy(match[N.ECN_KEY_PORT].value, True)
        elif entity.table == N.JOB_FEATURES_TABLE:
            features = cpp.JobFeatures()
            features.job = match[N.JOB_FEATURES_KEY_JOB].value
            features.spray = action.param(N.SET_JOB_FEATURES_SPRAY)
            features.prioritize = action.param(N.SET_JOB_FEATURES_PRIORITY)
            features.selective_drop = action.param(N.SET_JOB_FEATURES_DROP)
            state.AddJobFeatures(features)
        elif entity.table == N.PCN_JOB_TABLE:
            state.AddPcnJob(match[N.PCN_JOB_KEY_JOB].value, action.param(N.SET_PCN_JOB_THRESHOLD))
        elif entity.table == N.DDL_FLOW_TABLE:
            flow = cpp.DdlFlowRule()
            flow.src_value, flow.src_mask = _host_address(match.get(N.DDL_FLOW_KEY_SRC), addresses or {})
            flow.dst_value, flow.dst_mask = _host_address(match.get(N.DDL_FLOW_KEY_DST), addresses or {})
            flow.proto_value, flow.proto_mask = _ternary(match.get(N.DDL_FLOW_KEY_PROTOCOL), 8)
            flow.port_lo, flow.port_hi = _range(match.get(N.DDL_FLOW_KEY_DST_PORT), 0xFFFF)
            flow.entry_priority = entity.priority
            flow.job = action.param(N.SET_DDL_SENDER_JOB)
            flow.rank = action.param(N.SET_DDL_SENDER_RANK)
            state.AddDdlFlow(flow)
        else:
            raise SimError(f"table {entity.table} is not simulated yet")
        report.loaded[entity.table] = report.loaded.get(entity.table, 0) + 1
    return report
