"""Simulated switches forward by the controller's routes: a leaf's two equal-cost uplinks get
a sprayed gradient burst packet by packet, a TCP flow on one path only, and a job with
`spray: false` on one path too."""
from __future__ import annotations

import pytest

from controller.policy import load_policy, set_features
from hosts import wire
from sim.network import SimNetwork, SimOptions
from sim.rounds import run_tcp_rounds
from sim.topologies import leafspine

POLICY = load_policy("controller/policies/default.yaml")
UPLINKS = ("3/", "4/")     # leaf2's ports to spine1 and spine2 (two hosts per leaf come first)


@pytest.fixture
def fabric():
    nets = []

    def build(policy=POLICY) -> SimNetwork:
        net = SimNetwork(leafspine(2, 2, 2), policy, SimOptions(rate_gbps=1.0))
        nets.append(net)
        return net

    yield build
    for net in nets:
        net.close()


def uplink_packets(net: SimNetwork) -> list[int]:
    queues = net.switches["leaf2"].counters()["queues"]
    return [sum(q["tx"] for key, q in queues.items() if key.startswith(up)) for up in UPLINKS]


def burst(net: SimNetwork, packets: int = 200):
    tx = net.cpp.DatagramSender(net.node("h2x1"), net.address("ps"), 19527)
    rx = net.cpp.DatagramSink(net.node("ps"), 19527, wire.HEADER_LEN)
    for seq in range(packets):
        tx.Add(1e-5 * seq, wire.pack_header(wire.KIND_DATA, 0, 1, 0, 0, 1, 5, 100, seq) + bytes(100),
               wire.data_tos(5, False))
    return tx, rx


def test_gradient_data_is_sprayed_over_both_spines(fabric):
    net = fabric()
    _keep = burst(net)
    net.run(0.5)
    assert len(_keep[1].times) == 200
    a, b = uplink_packets(net)
    assert a + b == 200 and min(a, b) >= 60       # random per packet: both paths well used
    assert net.switches["leaf2"].routing.sprayed == 200


def test_a_tcp_flow_stays_on_one_path(fabric):
    net = fabric()
    out = run_tcp_rounds(net, "ps", ["h2x1"], 200_000, 1000, rounds=2, limit_s=2.0)
    assert out.complete
    a, b = uplink_packets(net)
    assert min(a, b) == 0 and max(a, b) > 100


def test_a_job_without_spraying_stays_on_one_path(fabric):
    net = fabric(set_features(POLICY, 1, spray=False))
    _keep = burst(net)
    net.run(0.5)
    a, b = uplink_packets(net)
    assert sorted((a, b)) == [0, 200]
    assert net.switches["leaf2"].routing.sprayed == 0
