"""Topologies beyond the emulation's size, from the one builder (`controller.topologies`,
which the emulation's Mininet networks come from too: the same address plan and port order).

`leafspine(leaves, spines, hosts_per_leaf)`: every leaf linked to every spine; host 1 of leaf
1 is the PS, every other host a worker (DLCP's simulated fabric is 144 hosts: 9 leaves x 16).
Incast and the PCN tree at any size come from `controller.topologies.build_topology`.
"""
from __future__ import annotations

from controller.errors import TopologyError
from controller.topologies import MAX_HOSTS_PER_LEAF, fabric
from controller.topology import Topology
from sim.errors import SimError

__all__ = ["MAX_HOSTS_PER_LEAF", "leafspine", "workers"]


def leafspine(leaves: int, spines: int, hosts_per_leaf: int, *, rate_mbps: float | None = None,
              queue_depth: int = 64, delay_ms: float = 0.0) -> Topology:
    """A validated leaf-spine description (`controller.topologies.fabric`); hosts h<leaf>x<k>
    (the PS is 'ps'); SimError when out of range."""
    try:
        return fabric(leaves, spines, hosts_per_leaf, rate_mbps=rate_mbps, queue_depth=queue_depth,
                      delay_ms=delay_ms)
    except TopologyError as exc:
        raise SimError(str(exc)) from None


def workers(topo: Topology) -> list[str]:
    """The worker hosts of a description, in description order."""
    return topo.hosts_with_role("worker")
