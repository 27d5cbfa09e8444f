"""Random link loss in the simulator (a topology's `loss_pct`): packets are dropped on the lossy
link at its rate, in both directions, drawn from ns-3's streams under the repetition's seed."""
from __future__ import annotations

import math

from controller.policy import load_policy
from experiments.backends.ns3 import harness
from sim import tcp
from sim.network import SimNetwork, SimOptions
from sim.rounds import run_tcp_rounds
from topo.topologies import TopoParams, build_topology

LOSS_PCT = 2.0


def _lossy_rounds(seed: int, loss_pct: float = LOSS_PCT):
    """Two rounds of two workers x 300 kB over a 1 Gb/s incast whose bottleneck loses `loss_pct`."""
    harness.seed_ns3(seed)
    tcp.configure(tcp.TcpSettings(cc="cubic"))
    topo = build_topology("incast", TopoParams(workers=2, background=0, bottleneck_pps=None, loss_pct=loss_pct))
    net = SimNetwork(topo, load_policy("controller/policies/default.yaml"), SimOptions(rate_gbps=1.0))
    try:
        out = run_tcp_rounds(net, "ps", ["w1", "w2"], 300_000, 300_000, rounds=2, limit_s=30)
    finally:
        net.close()
    trunk = next(link for link in topo.links if {link.a, link.b} == {"s1", "s2"})
    crossed = sum(q["tx"] for sw, port in (("s1", trunk.a_port), ("s2", trunk.b_port))
                  for key, q in out.switches[sw]["queues"].items() if key.split("/")[0] == str(port))
    return out, crossed


def test_the_bottleneck_loses_packets_at_its_rate_and_tcp_recovers():
    out, crossed = _lossy_rounds(seed=3)
    assert out.complete
    dropped = out.link_drops["s1-s2"]
    expected = crossed * LOSS_PCT / 100
    sd = math.sqrt(crossed * LOSS_PCT / 100 * (1 - LOSS_PCT / 100))
    assert abs(dropped - expected) < 4 * sd, (dropped, expected, sd)


def test_another_seed_loses_other_packets():
    # Not asserted: that the same seed repeats a lossy run exactly. The loss draws repeat, but
    # ns-3's TCP loss recovery did not always (docs/ns3.md, "Seeds and what is random").
    first, _ = _lossy_rounds(seed=5)
    other, _ = _lossy_rounds(seed=6)
    assert (other.link_drops, other.ends) != (first.link_drops, first.ends)


def test_a_link_without_loss_drops_nothing():
    out, crossed = _lossy_rounds(seed=3, loss_pct=0.0)
    assert out.complete and crossed > 0 and out.link_drops == {}
