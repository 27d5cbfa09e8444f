"""gradlane's UDP transport in ns-3 (`sim.lossy`): the agents' sessions on ns-3 sockets, through
the simulated switches' selective drop, priority queues and telemetry."""
from __future__ import annotations

import pytest

from controller.policy import load_policy
from hosts.transport.probe_answer import SEGMENT_CHUNKS
from experiments.backends.ns3 import harness
from sim.errors import SimError
from sim.lossy import run_lossy_rounds, transport_config
from sim.rounds import model_layer_sizes
from sim.network import SimNetwork, SimOptions
from topo.topologies import TopoParams, build_topology

SIZES = model_layer_sizes("128,64")
FLAGS = ["--bound", "0.1", "--bound-scope", "tensor", "--order", "interleave", "--cc", "ecn",
         "--window", "10"]


def _run(transport: str, flags: list[str], rounds: int = 3, workers: int = 4):
    topo = build_topology("incast", TopoParams(workers=workers, background=0, bottleneck_pps=3000,
                                               queue_depth=64))
    harness.seed_ns3(1)
    config = transport_config(transport, flags, len(SIZES), 360, 1)
    net = SimNetwork(topo, load_policy("controller/policies/default.yaml"))
    try:
        return run_lossy_rounds(net, "ps", [f"w{i}" for i in range(1, workers + 1)], config, SIZES,
                                rounds, limit_s=20.0, jitter_s=0.001, seed=1)
    finally:
        net.close()


def test_layer_sizes_are_the_mlps():
    assert SIZES == [64 * 128 + 128, 128 * 64 + 64, 64 * 10 + 10]
    assert sum(SIZES) == 17226


def test_gradlane_rounds_close_by_the_bound_through_the_simulated_switch():
    out = _run("ltp", [*FLAGS, "--reliable-pull"])
    assert out.complete, out.error
    assert [r.end is not None and r.end > r.start for r in out.rounds] == [True] * 3
    for r in out.rounds:
        assert set(r.push_closed_by.values()) <= {"bound", "complete"}
        assert r.violations == 0 and r.delivered_tensor_min >= 0.9
        assert r.queue_depth is not None and r.queue_depth > 0     # telemetry of the switches
        parts = r.worker_breakdown                                   # the agents' own split
        assert parts["push_s"] > 0 and parts["pull_s"] > 0 and parts["compute_s"] == 0
        assert sum(parts.values()) <= r.end - r.start + 1e-9
    s1 = out.switches["s1"]
    # 4 x 49 packets into a 64-packet queue: the switch drops DROPPABLE DATA selectively
    assert s1["selective_drops"] > 0
    assert out.counters["ps"]["data_packets_sent"] >= 3 * 4 * 49     # the pull is reliable


def test_mlt_is_plain_traffic_to_the_switch():
    out = _run("mlt", FLAGS, rounds=2)
    assert out.complete, out.error
    assert out.switches["s1"]["selective_drops"] == 0               # PLAIN: no loss budget
    assert all(r.queue_depth is None for r in out.rounds)            # and no telemetry


def test_bad_agent_flags_are_named():
    with pytest.raises(SimError, match="--window"):
        transport_config("ltp", ["--window", "-1"], 3, 360, 1)
    with pytest.raises(SimError, match="--no-such-flag are not the agents' transport flags"):
        transport_config("ltp", ["--no-such-flag"], 3, 360, 1)


def test_a_layer_larger_than_one_bitmap_is_repaired_without_a_peer_timeout():
    """A reliable pull of a layer of 24,000 chunks (one element each: three BITMAP segments,
    more than a single BITMAP could cover within a PROBE's answer budget) across 1 % random loss
    at 10 Gb/s: the PS learns every hole from the segments and the round ends in simulated
    milliseconds (before segments, the layer was never answered and the round ended at the
    worker's 10 s peer timeout)."""
    sizes = [100, 24_000, 50]
    assert -(-sizes[1] // SEGMENT_CHUNKS) == 3
    topo = build_topology("incast", TopoParams(workers=1, background=0, bottleneck_pps=833_333.3,
                                               queue_depth=64, loss_pct=1.0))
    harness.seed_ns3(1)
    config = transport_config("ltp", [*FLAGS, "--reliable-pull"], len(sizes), 1, 1)
    net = SimNetwork(topo, load_policy("controller/policies/default.yaml"), SimOptions(rate_gbps=10.0))
    try:
        out = run_lossy_rounds(net, "ps", ["w1"], config, sizes, 1, limit_s=20.0, seed=1)
    finally:
        net.close()
    assert out.complete, out.error
    (r,) = out.rounds
    assert r.end is not None and r.end - r.start < 1.0
    assert out.counters["w1"]["retx_received"] > 0      # the pull's holes were resent
