"""Topologies beyond the emulation's size, as descriptions of the one topology contract.

`leafspine(leaves, spines, hosts_per_leaf)`: every leaf linked to every spine; host 1 of leaf
1 is the PS, every other host a worker (DLCP's simulated fabric is 144 hosts: 9 leaves x 16).
The address plan is `topo.topologies`'s: switch with device id i owns 10.0.i.0/24.
Incast and the PCN tree at any size come from `topo.topologies.build_topology` directly.
"""
from __future__ import annotations

from controller.errors import TopologyError
from controller.topology import Host, Link, Switch, Topology
from sim.errors import SimError

MAX_HOSTS_PER_LEAF = 200


def leafspine(leaves: int, spines: int, hosts_per_leaf: int, *, rate_mbps: float | None = None,
              queue_depth: int = 64, delay_ms: float = 0.0) -> Topology:
    """A validated leaf-spine description; hosts h<leaf>x<k> (the PS is 'ps')."""
    if not 1 <= leaves <= 64 or not 1 <= spines <= 16:
        raise SimError(f"leaf-spine {leaves} leaves x {spines} spines: need 1..64 leaves, 1..16 spines")
    if not 1 <= hosts_per_leaf <= MAX_HOSTS_PER_LEAF:
        raise SimError(f"hosts_per_leaf {hosts_per_leaf} is not in 1..{MAX_HOSTS_PER_LEAF}")
    topo = Topology(name="leafspine")
    next_port: dict[str, int] = {}

    def switch(name: str) -> None:
        dev = len(topo.switches) + 1
        topo.switches[name] = Switch(name=name, device_id=dev, grpc_addr=f"127.0.0.1:{50000 + dev}",
                                     thrift_port=9090 + dev, router_mac=f"00:00:0a:00:{dev:02x}:fe",
                                     queue_depth=queue_depth)
        next_port[name] = 1

    def port(name: str) -> int:
        next_port[name] += 1
        return next_port[name] - 1

    for i in range(1, leaves + 1):
        switch(f"leaf{i}")
    for j in range(1, spines + 1):
        switch(f"spine{j}")
    for i in range(1, leaves + 1):
        leaf = f"leaf{i}"
        dev = topo.switches[leaf].device_id
        for k in range(1, hosts_per_leaf + 1):
            name = "ps" if (i, k) == (1, 1) else f"h{i}x{k}"
            p = port(leaf)
            topo.hosts[name] = Host(name=name, ip=f"10.0.{dev}.{k}", prefix_len=24,
                                    mac=f"08:00:00:00:{dev:02x}:{k:02x}", gateway=f"10.0.{dev}.254",
                                    switch=leaf, switch_port=p, role="ps" if name == "ps" else "worker")
            topo.links.append(Link(a=name, b=leaf, b_port=p, bw_mbps=rate_mbps, delay_ms=delay_ms))
    for i in range(1, leaves + 1):
        for j in range(1, spines + 1):
            a, b = f"leaf{i}", f"spine{j}"
            topo.links.append(Link(a=a, b=b, a_port=port(a), b_port=port(b), bw_mbps=rate_mbps,
                                   delay_ms=delay_ms))
    try:
        topo.validate("leaf-spine")
    except TopologyError as exc:
        raise SimError(str(exc)) from None
    return topo


def workers(topo: Topology) -> list[str]:
    """The worker hosts of a description, in description order."""
    return topo.hosts_with_role("worker")
