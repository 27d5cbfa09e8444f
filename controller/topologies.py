"""The built-in topologies, one builder for Mininet (`topo`) and ns-3 (`sim`): incast,
leaf-spine, the PCN paper's tree, and a sized leaf-spine fabric (DLCP's 144 hosts).

Address plan: switch with device id i owns 10.0.i.0/24, gateway 10.0.i.254, router MAC
00:00:0a:00:ii:fe; its k-th host is 10.0.i.k with MAC 08:00:00:00:ii:kk. Switch ports number
the hosts first (1, 2, ...), then the switch-to-switch links.

It lives beside the description it builds (`controller.topology`), below both `topo` and
`sim`: the simulator may not import `topo`, and the emulation needs no simulator to build a
network. Errors are `TopologyError`; `topo.topologies` and `sim.topologies` say them in their
own terms.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from controller.errors import TopologyError
from controller.topology import Host, Link, Switch, Topology

MAX_HOSTS_PER_LEAF = 200


@dataclass(frozen=True)
class TopoParams:
    """Knobs every topology takes (command-line options of `topo.run`)."""

    workers: int = 3
    background: int = 2
    jobs: int = 1              # host groups (incast): a PS and `workers` workers per job
    bottleneck_pps: float | None = 1000.0
    bottleneck_bytes: float | None = None   # bytes/s instead (embedded switch only): replaces pps
    queue_depth: int = 64
    delay_ms: float = 0.0
    loss_pct: float = 0.0
    bw_mbps: float | None = None
    # below the kernel's ephemeral ports (32768-60999 by default): a port in that range may be
    # taken by any client socket, a connect() to it even by the connecting socket itself
    grpc_base: int = 9600
    thrift_base: int = 9090
    log_dir: str = "logs"


class _Plan:
    """Accumulates switches, hosts and links with the address plan above."""

    def __init__(self, name: str, params: TopoParams, *, logs: bool = True) -> None:
        self.topo = Topology(name=name)
        self.params = params
        self.logs = logs           # each switch logs to log_dir/<name>.log (a simulation: no log)
        self._next_port: dict[str, int] = {}
        self._host_count: dict[str, int] = {}

    def switch(self, name: str, queue_depth: int | None = None) -> None:
        dev = len(self.topo.switches) + 1
        p = self.params
        self.topo.switches[name] = Switch(
            name=name, device_id=dev, grpc_addr=f"127.0.0.1:{p.grpc_base + dev}", thrift_port=p.thrift_base + dev,
            router_mac=f"00:00:0a:00:{dev:02x}:fe", log=f"{p.log_dir}/{name}.log" if self.logs else None,
            queue_depth=queue_depth or p.queue_depth)
        self._next_port[name] = 1
        self._host_count[name] = 0

    def _port(self, switch: str) -> int:
        port = self._next_port[switch]
        self._next_port[switch] = port + 1
        return port

    def host(self, name: str, switch: str, role: str, *, delay_ms: float = 0) -> None:
        dev = self.topo.switches[switch].device_id
        k = self._host_count[switch] = self._host_count[switch] + 1
        port = self._port(switch)
        self.topo.hosts[name] = Host(
            name=name, ip=f"10.0.{dev}.{k}", prefix_len=24, mac=f"08:00:00:00:{dev:02x}:{k:02x}",
            gateway=f"10.0.{dev}.254", switch=switch, switch_port=port, role=role)
        self.topo.links.append(Link(a=name, b=switch, b_port=port, bw_mbps=self.params.bw_mbps, delay_ms=delay_ms))

    def trunk(self, a: str, b: str, *, bottleneck: bool = False, delay_ms: float = 0) -> Link:
        p = self.params
        link = Link(a=a, b=b, a_port=self._port(a), b_port=self._port(b), bw_mbps=p.bw_mbps, delay_ms=delay_ms)
        if bottleneck:
            if p.bottleneck_bytes is not None:
                link.a_byte_rate = p.bottleneck_bytes
            else:
                link.a_queue_rate_pps = p.bottleneck_pps
            link.delay_ms = p.delay_ms
            link.loss_pct = p.loss_pct
        self.topo.links.append(link)
        return link


def incast(params: TopoParams) -> Topology:
    """Workers w1..wN and background senders b1..bB on s1; the PS and background sink bs on s2;
    the s1 -> s2 link is the bottleneck (queue rate `bottleneck_pps`, delay and loss).
    With `jobs` J > 1, J host groups share that bottleneck: workers w1..w(J x N) (group g has
    the g-th N of them) and parameter servers ps, ps2, .., psJ on s2."""
    plan = _Plan("incast", params)
    plan.switch("s1")
    plan.switch("s2")
    for i in range(1, params.workers * params.jobs + 1):
        plan.host(f"w{i}", "s1", "worker")
    for i in range(1, params.background + 1):
        plan.host(f"b{i}", "s1", "background")
    plan.host("ps", "s2", "ps")
    plan.host("bs", "s2", "background")
    for g in range(2, params.jobs + 1):
        plan.host(f"ps{g}", "s2", "ps")
    plan.trunk("s1", "s2", bottleneck=True)
    return plan.topo


def leafspine(params: TopoParams) -> Topology:
    """Leaves l1, l2 and spines sp1, sp2, every leaf linked to every spine. Workers split over
    the leaves (w1 on l1, w2 on l2, ...), the PS on l2, background host b1 on l1 and sink bs on l2;
    traffic l1 -> l2 has two equal-cost paths (one per spine), each uplink of l1 a bottleneck."""
    plan = _Plan("leafspine", params)
    for name in ("l1", "l2", "sp1", "sp2"):
        plan.switch(name)
    for i in range(1, params.workers + 1):
        plan.host(f"w{i}", "l1" if i % 2 else "l2", "worker")
    plan.host("ps", "l2", "ps")
    for i in range(1, params.background + 1):
        plan.host(f"b{i}", "l1", "background")
    plan.host("bs", "l2", "background")
    for leaf in ("l1", "l2"):
        for spine in ("sp1", "sp2"):
            plan.trunk(leaf, spine, bottleneck=(leaf == "l1"))
    return plan.topo


def pcn_tree(params: TopoParams) -> Topology:
    """The PCN paper's tree: root r1 with the PS and background sink bs; leaves l1, l2 each with
    one worker and three background senders; each leaf's uplink is the shared bottleneck
    (queue depth 60 as in the paper unless `queue_depth` says otherwise)."""
    plan = _Plan("pcn", params)
    depth = params.queue_depth if params.queue_depth != TopoParams.queue_depth else 60
    plan.switch("r1", queue_depth=depth)
    plan.switch("l1", queue_depth=depth)
    plan.switch("l2", queue_depth=depth)
    plan.host("ps", "r1", "ps")
    plan.host("bs", "r1", "background")
    workers = max(params.workers, 2)
    for i in range(1, workers + 1):
        plan.host(f"w{i}", "l1" if i % 2 else "l2", "worker")
    for i in range(1, 7):
        plan.host(f"b{i}", "l1" if i <= 3 else "l2", "background")
    plan.trunk("l1", "r1", bottleneck=True)
    plan.trunk("l2", "r1", bottleneck=True)
    return plan.topo


def fabric(leaves: int, spines: int, hosts_per_leaf: int, *, rate_mbps: float | None = None,
           queue_depth: int = 64, delay_ms: float = 0.0) -> Topology:
    """A leaf-spine fabric of any size, for the simulator: leaves leaf1..leafL and spines
    spine1..spineS, every leaf linked to every spine, `hosts_per_leaf` hosts on each leaf (host
    1 of leaf 1 is the PS 'ps', every other host h<leaf>x<k> a worker); every link at
    `rate_mbps` with `delay_ms`, no switch logs. Validated; TopologyError when out of range."""
    if not 1 <= leaves <= 64 or not 1 <= spines <= 16:
        raise TopologyError(f"leaf-spine {leaves} leaves x {spines} spines: need 1..64 leaves, 1..16 spines")
    if not 1 <= hosts_per_leaf <= MAX_HOSTS_PER_LEAF:
        raise TopologyError(f"hosts_per_leaf {hosts_per_leaf} is not in 1..{MAX_HOSTS_PER_LEAF}")
    plan = _Plan("leafspine", TopoParams(queue_depth=queue_depth, bw_mbps=rate_mbps), logs=False)
    for i in range(1, leaves + 1):
        plan.switch(f"leaf{i}")
    for j in range(1, spines + 1):
        plan.switch(f"spine{j}")
    for i in range(1, leaves + 1):
        for k in range(1, hosts_per_leaf + 1):
            name = "ps" if (i, k) == (1, 1) else f"h{i}x{k}"
            plan.host(name, f"leaf{i}", "ps" if name == "ps" else "worker", delay_ms=delay_ms)
    for i in range(1, leaves + 1):
        for j in range(1, spines + 1):
            plan.trunk(f"leaf{i}", f"spine{j}", delay_ms=delay_ms)
    plan.topo.validate("leaf-spine")
    return plan.topo


TOPOLOGIES: dict[str, Callable[[TopoParams], Topology]] = {
    "incast": incast,
    "leafspine": leafspine,
    "pcn": pcn_tree,
}


def build_topology(name: str, params: TopoParams | None = None) -> Topology:
    """The named built-in topology, validated; TopologyError for an unknown name or bad params."""
    try:
        factory = TOPOLOGIES[name]
    except KeyError:
        raise TopologyError(f"unknown topology '{name}' (choose from {', '.join(TOPOLOGIES)})") from None
    params = params or TopoParams()
    if params.workers < 1 or params.background < 0:
        raise TopologyError("need at least 1 worker and >= 0 background hosts")
    if not 1 <= params.jobs <= 8:
        raise TopologyError(f"jobs {params.jobs}: need 1..8 host groups")
    if params.jobs > 1 and name != "incast":
        raise TopologyError(f"several jobs' host groups exist in the incast topology only, "
                            f"not in '{name}'")
    topo = factory(params)
    topo.validate(f"topology '{name}'")
    return topo
