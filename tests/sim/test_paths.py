"""`SimNetwork.base_rtt_s`: a path's round-trip time without queueing, from its links."""
from __future__ import annotations

import pytest

from controller.policy import load_policy
from sim.errors import SimError
from sim.network import SimNetwork, SimOptions
from controller.topologies import TopoParams, build_topology


def test_base_rtt_adds_propagation_and_serialization_per_hop():
    topo = build_topology("incast", TopoParams(workers=2, background=0, bottleneck_pps=None, delay_ms=0.015))
    net = SimNetwork(topo, load_policy("controller/policies/default.yaml"), SimOptions(rate_gbps=10.0))
    try:
        rtt = net.base_rtt_s("w1", "ps")
        with pytest.raises(SimError, match="no path"):
            net.base_rtt_s("w1", "nobody")
    finally:
        net.close()
    # w1-s1 and s2-ps: 1 us each way; s1-s2: 15 us each way; 1500 bytes out and 64 back per hop
    assert rtt == pytest.approx(2 * (1e-6 + 15e-6 + 1e-6) + 3 * (1500 + 64) * 8 / 10e9)
