"""Repetitions of a simulated arm: each has its own seed (the emulation's config seed + rep), other
seeds give other runs where randomness exists, and a repetition's seed reproduces it exactly."""
from __future__ import annotations

from dataclasses import replace

import pytest

from controller.policy import load_policy
from experiments import config as configs
from experiments.backends.ns3 import harness
from sim.errors import SimError
from sim.network import SimNetwork, SimOptions
from sim.rounds import run_tcp_rounds
from sim.topologies import leafspine


def _incast(**params):
    cfg = configs.load(configs.default_path("ltp_incast"), quick=True)
    cfg = harness.setup(replace(cfg, rounds=3, topology=replace(cfg.topology, workers=4),
                                params={**cfg.params, **params}))
    return cfg, next(a for a in cfg.arms if a.name == "tcp-cubic")


def _run(cfg, arm, rep, tmp_path):
    result = harness.run_arm(cfg, arm, rep, tmp_path)
    assert result.ok, result.error
    return [r["round_time_s"] for r in result.rounds], result.extra


def test_seeds_vary_the_run_and_reproduce_it(tmp_path):
    cfg, arm = _incast()
    first, extra = _run(cfg, arm, 0, tmp_path)
    again, extra_again = _run(cfg, arm, 0, tmp_path)
    other, extra_other = _run(cfg, arm, 1, tmp_path)
    assert extra["sim_rng"] == {"ns3_seed": 1, "ns3_run": cfg.seed, "start_jitter_s": 0.001}
    assert extra_other["sim_rng"]["ns3_run"] == cfg.seed + 1
    assert again == first and extra_again["sim_switches"] == extra["sim_switches"]
    assert other != first
    # the recorded seed alone reproduces a repetition: a config whose seed is rep 1's, at rep 0
    reproduced, _ = _run(replace(cfg, seed=cfg.seed + 1), arm, 0, tmp_path)
    assert reproduced == other


def test_without_jitter_a_single_path_incast_has_no_randomness(tmp_path):
    cfg, arm = _incast(sim_start_jitter_ms=0)
    assert _run(cfg, arm, 0, tmp_path)[0] == _run(cfg, arm, 1, tmp_path)[0]


def test_a_negative_jitter_is_refused():
    with pytest.raises(SimError, match="sim_start_jitter_ms"):
        _incast(sim_start_jitter_ms=-1)


def _tcp_path(seed: int) -> int:
    """Which of leaf2's two uplinks a TCP flow from h2x1 to the PS takes with `seed`."""
    harness.seed_ns3(seed)
    net = SimNetwork(leafspine(2, 2, 2), load_policy("controller/policies/default.yaml"),
                     SimOptions(rate_gbps=1.0))
    try:
        assert run_tcp_rounds(net, "ps", ["h2x1"], 100_000, 1000, rounds=1, limit_s=2.0).complete
        queues = net.switches["leaf2"].counters()["queues"]
        used = [sum(q["tx"] for key, q in queues.items() if key.startswith(up)) > 0 for up in ("3/", "4/")]
    finally:
        net.close()
    assert sum(used) == 1           # per flow: one path
    return used.index(True)


def test_the_flow_hash_is_salted_by_the_seed():
    paths = [_tcp_path(seed) for seed in range(6)]
    assert set(paths) == {0, 1}     # ns-3's ephemeral ports are the same every run: the salt moves flows
    assert _tcp_path(3) == paths[3]
