"""Loss bursts on the simulated bottleneck (`SimOptions.bursts`, `SimNetwork.start_burst`, DBLP's
microbursts): the link drops only while a burst lasts, at the burst's rate, then no more."""
from __future__ import annotations

import pytest

from controller.policy import load_policy
from experiments.backends.ns3 import harness
from sim.errors import SimError
from sim.lossy import run_lossy_rounds, transport_config
from sim.network import SimNetwork, SimOptions
from sim.rounds import model_layer_sizes
from controller.topologies import TopoParams, build_topology

SIZES = model_layer_sizes("128,64")
FLAGS = ["--bound", "0.008", "--probe-on-silence", "--window", "0"]     # DBLP's arms
BURST_ROUND = 2
BURST_S = 0.2


def _run(bursts: str | None, loss: float, rounds: int = 4):
    """`rounds` MLT rounds of 2 workers over a 2000 packets/s bottleneck; a burst of `loss` for
    BURST_S starts with round BURST_ROUND."""
    topo = build_topology("incast", TopoParams(workers=2, background=0, bottleneck_pps=2000, queue_depth=64))
    harness.seed_ns3(1)
    config = transport_config("mlt", FLAGS, len(SIZES), 360, 1)
    net = SimNetwork(topo, load_policy("controller/policies/default.yaml"), SimOptions(bursts=bursts))
    started: list[float] = []

    def start(round_: int) -> None:
        if round_ == BURST_ROUND and bursts is not None:
            started.append(net.ns.Simulator.Now().GetSeconds())
            net.start_burst(loss, BURST_S)
    try:
        out = run_lossy_rounds(net, "ps", ["w1", "w2"], config, SIZES, rounds, limit_s=20.0,
                               seed=1, on_round_start=start)
        return out, net.link_drops(), net.burst_drops(), started
    finally:
        net.close()


def test_a_burst_drops_only_while_it_lasts():
    out, drops, in_burst, started = _run("congested", 1.0)
    assert out.complete, out.error
    assert started and sum(in_burst.values()) > 0
    assert drops == in_burst                       # nothing dropped outside the burst window
    hit = out.rounds[BURST_ROUND]
    assert hit.start == pytest.approx(started[0])
    # every push packet dropped for BURST_S: the round cannot close before the burst ends
    assert hit.end - hit.start >= BURST_S
    calm = [r.end - r.start for i, r in enumerate(out.rounds) if i not in (0, BURST_ROUND)]
    assert max(calm) < BURST_S


def test_a_partial_burst_drops_some_and_without_bursts_nothing_drops():
    out, drops, in_burst, _ = _run("both", 0.5)
    assert out.complete and drops == in_burst and sum(drops.values()) > 0
    out, drops, in_burst, _ = _run(None, 0.5)
    assert out.complete and drops == {} and in_burst == {}


def test_bad_burst_settings_fail_in_one_line():
    with pytest.raises(SimError, match="bursts"):
        SimOptions(bursts="sideways")
