"""An ns-3 network built from a topology description (`controller.topology.Topology`).

Every host and switch becomes an ns-3 node with an IPv4 stack; every link a point-to-point
link with its own /30 (the simulator's addresses, not the description's). Each switch port's
egress runs `gradlane_sim::PortQueueDisc` (8 strict-priority queues of the switch's
`queue_depth` packets) over one `SwitchState` per switch, filled with the controller's entries
(`sim.tables`). Switches forward by the controller's routes (`gradlane_sim::SwitchRouting`:
equal-cost groups, per-packet spraying of gradient DATA, per-flow hashing of the rest); hosts
by ns-3's global routing (their one link).

Rates: a link's `bw_mbps` when set, else `SimOptions.rate_gbps`; a switch end with a queue
rate in packets/s sends at that rate in `SimOptions.packet_bytes`-byte packets.
Delay: a link's `delay_ms` when set, else `SimOptions.link_delay_us`.
Loss: a link's `loss_pct` drops packets at random in both directions (`gradlane_sim::LinkLoss`,
ns-3's per-packet RateErrorModel on each receiving end, each on its own numbered ns-3 stream: the
repetition's run number fixes the draws); `SimNetwork.link_drops()` counts the drops.
Bursts: with `SimOptions.bursts` set, the bottleneck links (those with a queue rate on an end)
also get a model on the receiving end of the rated direction ("congested") or of both
("both"); `SimNetwork.start_burst` raises their loss for a while (DBLP's microbursts).
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Any

from controller.network import NetworkOptions
from controller.policy import Policy
from controller.topology import Link, Topology
from sim import engine, tables
from sim.errors import SimError

# Packets a switch port's device holds below the queue disc (the one being put on the wire
# waits there): everything else waits in the priority queues.
DEVICE_QUEUE = "1p"
BURST_DIRECTIONS = (None, "congested", "both")


@dataclass(frozen=True)
class SimOptions:
    """What a topology description does not say about a simulated network."""

    rate_gbps: float = 10.0          # links without bw_mbps
    link_delay_us: float = 1.0       # links without delay_ms
    packet_bytes: int = 1500         # converts queue rates in packets/s to bits/s
    network: NetworkOptions = NetworkOptions()
    # A software switch's forwarding rate (packets/s), for comparing with the emulation: a
    # host's packets enter its switch at most this fast, and wait in the host's own (deep)
    # queues meanwhile, as they wait in an emulated switch process's socket buffer. The
    # embedded switch forwards about 23,600 packets/s of gradlane's program without loss
    # (benchmarks/baseline.json); its one process serves all ports, modelled here per host link.
    switch_pps: float | None = None
    # The agents' own software time (microseconds per datagram a host's Python transport
    # receives / sends; 0: hosts answer instantly), for comparing with the emulation: each host
    # is one serial server (`sim/cpp/bridge.h : UdpBridge::SetServiceTime`). Only gradlane's
    # and MLT's agents (sim/lossy.py) take it; TCP runs in the kernel. docs/ns3.md, "Host
    # software time", says where the values come from (benchmarks/agent_cost.py).
    host_rx_us: float = 0.0
    host_tx_us: float = 0.0
    # Which ends of the bottleneck links `SimNetwork.start_burst` hits: None (no bursts),
    # "congested" (the rated direction's receiving end) or "both".
    bursts: str | None = None

    def __post_init__(self) -> None:
        if not self.rate_gbps > 0:
            raise SimError(f"rate_gbps {self.rate_gbps} is not a rate > 0")
        if self.link_delay_us < 0:
            raise SimError(f"link_delay_us {self.link_delay_us} is below 0")
        if self.switch_pps is not None and not self.switch_pps > 0:
            raise SimError(f"switch_pps {self.switch_pps} is not a rate > 0")
        for name in ("host_rx_us", "host_tx_us"):
            if not getattr(self, name) >= 0:
                raise SimError(f"{name} {getattr(self, name)} is not a time >= 0")
        if not 64 <= self.packet_bytes <= 9000:
            raise SimError(f"packet_bytes {self.packet_bytes} is not in 64..9000")
        if self.bursts not in BURST_DIRECTIONS:
            raise SimError(f"bursts {self.bursts!r} is not one of {', '.join(map(str, BURST_DIRECTIONS))}")


@dataclass
class SimSwitch:
    """One simulated switch: its C++ state and the queue disc of each P4 port."""

    name: str
    state: Any
    queues: dict[int, Any] = field(default_factory=dict)
    report: tables.LoadReport = field(default_factory=tables.LoadReport)
    routing: Any = None

    def counters(self) -> dict[str, Any]:
        """Per-queue and per-slot counters, as plain numbers: totals and the busy queues."""
        s = self.state
        queues = {}
        for port in sorted(self.queues):
            for prio in range(8):
                i = port * 8 + prio
                row = {"tx": int(s.queue_tx[i]), "marked": int(s.queue_marked[i]),
                       "selective_drops": int(s.queue_selective_drops[i]),
                       "tail_drops": int(s.queue_tail_drops[i]), "max_depth": int(s.queue_max_depth[i])}
                if any(row.values()):
                    queues[f"{port}/{prio}"] = row
        return {"queues": queues,
                "tail_drops": sum(q["tail_drops"] for q in queues.values()),
                "selective_drops": sum(q["selective_drops"] for q in queues.values()),
                "marked": sum(q["marked"] for q in queues.values()),
                "max_depth": max((q["max_depth"] for q in queues.values()), default=0),
                "pcn_starts": sum(int(x) for x in s.pcn_start),
                "pcn_arrivals": sum(int(x) for x in s.pcn_arrival)}


class SimNetwork:
    """The ns-3 nodes, links and switches of one topology (one simulation per process run:
    call :meth:`run` once, then read the results)."""

    def __init__(self, topo: Topology, policy: Policy, options: SimOptions = SimOptions()) -> None:
        self.topo = topo
        self.options = options
        self.ns = ns = engine.ns3()
        self.cpp = cpp = engine.cpp()
        cpp.PortQueueDisc.GetTypeId()   # registers the type name for TrafficControlHelper
        self.nodes: dict[str, Any] = {}
        for name in [*topo.hosts, *topo.switches]:
            self.nodes[name] = ns.CreateObject[ns.Node]()
        stack = ns.InternetStackHelper()
        for node in self.nodes.values():
            stack.Install(node)
        self.switches = {name: SimSwitch(name, cpp.SwitchState(max(topo.ports(name), default=0)))
                         for name in topo.switches}
        entries = {name: tables.switch_entries(topo, name, policy, options.network) for name in topo.switches}
        self.addresses: dict[str, Any] = {}
        self._peers: dict[tuple[str, int], tuple[Any, Any]] = {}   # (switch, port) -> (device, neighbour address)
        addr = ns.Ipv4AddressHelper()
        addr.SetBase(ns.Ipv4Address("10.0.0.0"), ns.Ipv4Mask("255.255.255.252"))
        self._keep: list[Any] = []
        self.losses: dict[str, Any] = {}     # 'a-b' -> gradlane_sim::LinkLoss of a lossy link
        for link in topo.links:
            self._link(link, addr)
            addr.NewNetwork()
        # entries load once hosts have their simulated addresses (ddl_flow keys name hosts)
        simulated = {int(ipaddress.IPv4Address(h.ip)): self.addresses[name].Get()
                     for name, h in topo.hosts.items() if name in self.addresses}
        for name, sw in self.switches.items():
            sw.report = tables.load(sw.state, entries[name], cpp, simulated)
        ns.Ipv4GlobalRoutingHelper.PopulateRoutingTables()
        for name in topo.switches:
            self._routing(name, entries[name])

    # -- building -----------------------------------------------------------------------------
    def _rate_bps(self, link: Link, node: str) -> float:
        rate = (link.bw_mbps * 1e6) if link.bw_mbps else self.options.rate_gbps * 1e9
        _, pps = link.end(node)
        if node in self.topo.switches and pps is None:
            pps = self.topo.switches[node].queue_rate_pps
        if node in self.topo.hosts and self.options.switch_pps:
            pps = self.options.switch_pps
        if pps is not None:
            rate = min(rate, pps * self.options.packet_bytes * 8)
        return rate

    def _link(self, link: Link, addr: Any) -> None:
        ns = self.ns
        p2p = ns.PointToPointHelper()
        delay_us = link.delay_ms * 1000 if link.delay_ms else self.options.link_delay_us
        p2p.SetChannelAttribute("Delay", ns.TimeValue(ns.NanoSeconds(int(delay_us * 1000))))
        devices = p2p.Install(self.nodes[link.a], self.nodes[link.b])
        for i, node in enumerate((link.a, link.b)):
            dev = devices.Get(i)
            dev.SetAttribute("DataRate", ns.DataRateValue(ns.DataRate(int(self._rate_bps(link, node)))))
            if node in self.topo.switches:
                self._switch_port(node, link.port_of(node), dev)
        burst = self._burst_receivers(link)
        if link.loss_pct or burst:
            loss = self.cpp.LinkLoss()
            for i in range(2):
                if link.loss_pct or i in burst:
                    loss.Attach(devices.Get(i), link.loss_pct / 100.0, 2 * len(self.losses) + i, i in burst)
            self.losses[f"{link.a}-{link.b}"] = loss
        interfaces = addr.Assign(devices)
        for i, node in enumerate((link.a, link.b)):
            if node in self.topo.hosts:
                self.addresses[node] = interfaces.GetAddress(i)
            else:
                self._peers[(node, link.port_of(node))] = (devices.Get(i), interfaces.GetAddress(1 - i))
        self._keep.append(interfaces)

    def _burst_receivers(self, link: Link) -> set[int]:
        """Which ends of `link` (0: a, 1: b) drop during a burst: none unless the link is a
        bottleneck (a queue rate on an end) and bursts are on; with "congested" the far end of
        each rated egress."""
        rated = [i for i, end in enumerate((link.a, link.b)) if link.end(end)[1] is not None]
        if self.options.bursts is None or not rated:
            return set()
        return {0, 1} if self.options.bursts == "both" else {1 - i for i in rated}

    def _switch_port(self, switch: str, port: int, dev: Any) -> None:
        ns, cpp = self.ns, self.cpp
        # the device holds DEVICE_QUEUE packets, the queue disc's priority queues the rest
        p2p_dev = ns.DynamicCast[ns.PointToPointNetDevice](dev)
        p2p_dev.GetQueue().SetMaxSize(ns.QueueSize(DEVICE_QUEUE))
        helper = ns.TrafficControlHelper()
        helper.SetRootQueueDisc("gradlane_sim::PortQueueDisc")
        disc = ns.DynamicCast[cpp.PortQueueDisc](helper.Install(dev).Get(0))
        sw = self.switches[switch]
        disc.Configure(sw.state, port, self.topo.switches[switch].queue_depth)
        sw.queues[port] = disc

    def _routing(self, switch: str, entries: list[Any]) -> None:
        ns, cpp = self.ns, self.cpp
        node = self.nodes[switch]
        ipv4 = node.GetObject[ns.Ipv4]()
        routing = ns.CreateObject[cpp.SwitchRouting]()
        routing.Configure(self.switches[switch].state)
        for (name, port), (dev, peer) in self._peers.items():
            if name == switch:
                routing.SetPort(port, ipv4.GetInterfaceForDevice(dev), peer)
        by_ip = {int(ipaddress.IPv4Address(h.ip)): name for name, h in self.topo.hosts.items()}
        for dst, ports in tables.routes(entries):
            routing.AddRoute(self.addresses[by_ip[dst]], list(ports))
        ns.DynamicCast[ns.Ipv4ListRouting](ipv4.GetRoutingProtocol()).AddRoutingProtocol(routing, 10)
        self.switches[switch].routing = routing

    # -- use ----------------------------------------------------------------------------------
    def node(self, name: str) -> Any:
        """The ns-3 node of host or switch `name`."""
        try:
            return self.nodes[name]
        except KeyError:
            raise SimError(f"no node '{name}' in topology '{self.topo.name}'") from None

    def address(self, host: str) -> Any:
        """The simulated IPv4 address of `host`."""
        try:
            return self.addresses[host]
        except KeyError:
            raise SimError(f"no host '{host}' in topology '{self.topo.name}'") from None

    def host_rate_bps(self, host: str) -> float:
        """The rate at which `host` sends into its one link, bits/s (its NIC's line rate, or
        `SimOptions.switch_pps` full-size packets per second where that is set)."""
        if host not in self.topo.hosts:
            raise SimError(f"no host '{host}' in topology '{self.topo.name}'")
        link = next(lk for lk in self.topo.links if host in (lk.a, lk.b))
        return self._rate_bps(link, host)

    def base_rtt_s(self, src: str, dst: str, ack_bytes: int = 64) -> float:
        """The round-trip time from host `src` to host `dst` without queueing, computed from the
        links on the fewest-hop path: propagation both ways, one full-size packet
        (`SimOptions.packet_bytes`) serialized per hop out and one `ack_bytes` ACK per hop back."""
        path = self._path(src, dst)
        total = 0.0
        for u, v in zip(path[:-1], path[1:]):
            link = next(lk for lk in self.topo.links if {lk.a, lk.b} == {u, v})
            delay = link.delay_ms / 1000 if link.delay_ms else self.options.link_delay_us / 1e6
            total += 2 * delay + self.options.packet_bytes * 8 / self._rate_bps(link, u) \
                + ack_bytes * 8 / self._rate_bps(link, v)
        return total

    def _path(self, src: str, dst: str) -> list[str]:
        previous: dict[str, str | None] = {src: None}
        frontier = [src]
        while frontier and dst not in previous:
            nxt = []
            for u in frontier:
                for link in self.topo.links:
                    if u in (link.a, link.b):
                        v = link.b if u == link.a else link.a
                        if v not in previous and (v == dst or v in self.topo.switches):
                            previous[v] = u
                            nxt.append(v)
            frontier = nxt
        if dst not in previous:
            raise SimError(f"no path from '{src}' to '{dst}' in topology '{self.topo.name}'")
        path = [dst]
        while previous[path[-1]] is not None:
            path.append(previous[path[-1]])
        return path[::-1]

    def link_drops(self) -> dict[str, int]:
        """Packets each lossy link ('a-b') has dropped at random so far, both directions."""
        return {name: int(loss.dropped) for name, loss in self.losses.items()}

    def start_burst(self, loss: float, duration_s: float) -> None:
        """From now for `duration_s` simulated seconds, the bottleneck's burst ends
        (`SimOptions.bursts`) drop packets with probability `loss`."""
        if self.options.bursts is None:
            raise SimError("a burst needs SimOptions.bursts")
        if not 0.0 <= loss <= 1.0:
            raise SimError(f"burst loss {loss!r} is not a probability in [0, 1]")
        if not 0.0 < duration_s < float("inf"):
            raise SimError(f"burst duration {duration_s!r} is not a time > 0 in seconds")
        for link in self.topo.links:
            if self._burst_receivers(link):
                self.losses[f"{link.a}-{link.b}"].StartBurst(loss, duration_s)

    def burst_drops(self) -> dict[str, int]:
        """Of `link_drops`, the packets each link dropped during bursts."""
        return {name: int(loss.burst_dropped) for name, loss in self.losses.items()}

    def run(self, stop_s: float) -> None:
        """Run the simulation until simulated time `stop_s` (or until no event is left)."""
        ns = self.ns
        ns.Simulator.Stop(ns.Seconds(stop_s))
        ns.Simulator.Run()

    def close(self) -> None:
        """Free the simulator's state (events, nodes); the network cannot run again."""
        self.ns.Simulator.Destroy()
