"""Network programming derived from the topology: what every switch needs to forward.

Per switch: ARP answers for the gateways and the host addresses of the attached subnets
(routing is L3 with /32 host routes, so the switch is every host's next hop), one route per
host whose next hops are all shortest-path neighbours (an action-selector group when there are
several), DSCP fallback classes, ECN/PCN thresholds per port, and queue settings for Thrift.
"""
from __future__ import annotations

import ipaddress
from collections import deque
from dataclasses import dataclass, field

from controller import p4names as N
from controller.entries import Action, Entity, Exact, Group, Lpm, Member, TableEntry, Ternary
from controller.errors import ConfigError
from controller.topology import Topology

INFINITE = 0xFFFFFFFF
ECN_DEPTHS = ("queue", "port")


@dataclass(frozen=True)
class NetworkOptions:
    """Defaults the topology does not carry."""

    ecn_normal: int = 40            # PCN paper's normal marking threshold (packets)
    ecn_pcn: int = 10               # threshold while a PCN burst is pending
    dscp_drop_threshold: int = INFINITE  # commodity Not-ECT drop threshold for DSCP classes
    # What each port compares its ECN threshold with: "queue", the packet's own priority queue,
    # or "port", the port's occupancy over all its priority queues (docs/ns3.md, "Where
    # gradlane's push tail-drops": with strict priority, a lower class's standing queue then
    # marks the higher classes' ECT packets too).
    ecn_depth: str = "queue"

    def __post_init__(self) -> None:
        if self.ecn_depth not in ECN_DEPTHS:
            raise ConfigError(f"ecn_depth {self.ecn_depth!r} is not one of {', '.join(ECN_DEPTHS)}")


@dataclass(frozen=True)
class QueueSetting:
    """A Thrift queue command: rate (packets/s) or depth (packets), port None = all ports."""

    kind: str                   # "rate" | "depth"
    value: int
    port: int | None = None

    def command(self) -> str:
        """The simple_switch_CLI command line."""
        name = "set_queue_rate" if self.kind == "rate" else "set_queue_depth"
        return f"{name} {self.value}" + (f" {self.port}" if self.port is not None else "")


@dataclass
class SwitchPlan:
    """Everything the network layer installs on one switch."""

    switch: str
    entities: list[Entity] = field(default_factory=list)
    queues: list[QueueSetting] = field(default_factory=list)


def _distances(topo: Topology, target: str) -> dict[str, int]:
    """Hop distance of every switch to switch ``target`` (BFS over switch-switch links)."""
    dist = {target: 0}
    todo = deque([target])
    while todo:
        here = todo.popleft()
        for _, nb in topo.switch_neighbors(here):
            if nb not in dist:
                dist[nb] = dist[here] + 1
                todo.append(nb)
    return dist


def _int_ip(addr: str) -> int:
    return int(ipaddress.IPv4Address(addr))


def _int_mac(mac: str) -> int:
    return int(mac.replace(":", ""), 16)


def arp_entries(topo: Topology, switch: str) -> list[TableEntry]:
    """ARP answers: every gateway of an attached host and every host address in those subnets."""
    sw = topo.switches[switch]
    attached = [h for h in topo.hosts.values() if h.switch == switch]
    nets = {h.network for h in attached}
    addrs = {h.gateway for h in attached}
    addrs |= {h.ip for h in topo.hosts.values()
              if any(ipaddress.IPv4Address(h.ip) in net for net in nets)}
    return [TableEntry(N.ARP_TABLE,
                       ((N.ARP_KEY_OPER, Exact(N.ARP_OPER_REQUEST)), (N.ARP_KEY_TPA, Exact(_int_ip(a)))),
                       Action.of(N.ARP_REPLY, **{N.ARP_REPLY_MAC: _int_mac(sw.router_mac)}))
            for a in sorted(addrs, key=_int_ip)]


def route_entities(topo: Topology, switch: str) -> list[Entity]:
    """Members (one per next-hop port), groups (one per equal-cost set) and /32 host routes."""
    sw = topo.switches[switch]
    src = _int_mac(sw.router_mac)
    members: dict[int, Member] = {}

    def member(port: int, dst_mac: str) -> int:
        mid = port + 1  # member ids are derived from the port: stable across recomputation
        members.setdefault(mid, Member(N.ECMP_PROFILE, mid, Action.of(
            N.SET_NHOP, **{N.SET_NHOP_SRC_MAC: src, N.SET_NHOP_DST_MAC: _int_mac(dst_mac),
                           N.SET_NHOP_PORT: port})))
        return mid

    groups: dict[tuple[int, ...], int] = {}
    routes: list[TableEntry] = []
    dist_cache: dict[str, dict[str, int]] = {}
    for host in sorted(topo.hosts.values(), key=lambda h: _int_ip(h.ip)):
        match = ((N.ROUTE_KEY_DST, Lpm(_int_ip(host.ip), 32)),)
        if host.switch == switch:
            mid = member(host.switch_port, host.mac)
            routes.append(TableEntry(N.ROUTE_TABLE, match, member_id=mid))
            continue
        dist = dist_cache.setdefault(host.switch, _distances(topo, host.switch))
        if switch not in dist:
            continue  # unreachable part of the network: no route, packets hit the default drop
        hops = sorted({member(port, topo.switches[nb].router_mac)
                       for port, nb in topo.switch_neighbors(switch)
                       if dist.get(nb, -1) == dist[switch] - 1})
        if len(hops) > N.ECMP_MAX_GROUP_SIZE:
            raise ConfigError(f"switch {switch}: {len(hops)} equal-cost next hops to {host.name}, "
                              f"the selector holds {N.ECMP_MAX_GROUP_SIZE}")
        if len(hops) == 1:
            routes.append(TableEntry(N.ROUTE_TABLE, match, member_id=hops[0]))
        else:
            gid = groups.setdefault(tuple(hops), len(groups) + 1)
            routes.append(TableEntry(N.ROUTE_TABLE, match, group_id=gid))
    out: list[Entity] = [members[m] for m in sorted(members)]
    out += [Group(N.ECMP_PROFILE, gid, hops, N.ECMP_MAX_GROUP_SIZE) for hops, gid in groups.items()]
    return out + routes


def dscp_entries(options: NetworkOptions, priority_queues: int = 8) -> list[TableEntry]:
    """Fallback classes for traffic without the gradient header: IP precedence p -> queue p
    (capped at the switch's highest queue; BMv2 drops priorities beyond its queues)."""
    top = max(0, priority_queues - 1)
    return [TableEntry(N.DSCP_TABLE, ((N.DSCP_KEY, Ternary(prec << N.DSCP_PRECEDENCE_SHIFT,
                                                           N.DSCP_PRECEDENCE_MASK)),),
                       Action.of(N.SET_DSCP_CLASS, **{N.SET_DSCP_PRIO: min(prec, top),
                                                      N.SET_DSCP_DROP_THRESHOLD: options.dscp_drop_threshold}),
                       priority=1)
            for prec in range(1, 8)]


def ecn_entry(port: int, normal: int, pcn: int) -> TableEntry:
    """The ECN/PCN thresholds of one egress port."""
    return TableEntry(N.ECN_TABLE, ((N.ECN_KEY_PORT, Exact(port)),),
                      Action.of(N.SET_ECN, **{N.SET_ECN_NORMAL: normal, N.SET_ECN_PCN: pcn}))


def ecn_depth_entry(port: int) -> TableEntry:
    """Egress port `port` compares its ECN threshold with its occupancy over all its queues."""
    return TableEntry(N.ECN_DEPTH_TABLE, ((N.ECN_KEY_PORT, Exact(port)),),
                      Action.of(N.COMPARE_PORT_OCCUPANCY))


def queue_settings(topo: Topology, switch: str) -> list[QueueSetting]:
    """Depth for all queues, then the switch-wide rate, then per-port rates named by links."""
    sw = topo.switches[switch]
    out = [QueueSetting("depth", sw.queue_depth)]
    if sw.queue_rate_pps is not None:
        out.append(QueueSetting("rate", int(sw.queue_rate_pps)))
    for link in topo.links:
        if switch in (link.a, link.b):
            port, rate = link.end(switch)
            if port is not None and rate is not None:
                out.append(QueueSetting("rate", int(rate), port))
    return out


def plan_switch(topo: Topology, switch: str, options: NetworkOptions = NetworkOptions(),
                ecn_overrides: dict[int, tuple[int, int]] | None = None) -> SwitchPlan:
    """The whole network state of ``switch``; ``ecn_overrides`` maps port -> (normal, pcn)."""
    if switch not in topo.switches:
        raise ConfigError(f"unknown switch '{switch}'")
    overrides = ecn_overrides or {}
    ecn = [ecn_entry(port, *overrides.get(port, (options.ecn_normal, options.ecn_pcn)))
           for port in sorted(topo.ports(switch))]
    if options.ecn_depth == "port":
        ecn += [ecn_depth_entry(port) for port in sorted(topo.ports(switch))]
    entities: list[Entity] = [*arp_entries(topo, switch), *route_entities(topo, switch),
                              *dscp_entries(options, topo.switches[switch].priority_queues), *ecn]
    return SwitchPlan(switch, entities, queue_settings(topo, switch))
