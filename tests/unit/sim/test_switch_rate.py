"""`SimOptions.switch_pps` (a software switch's forwarding rate, for comparing with the
emulation): a host's packets enter its switch no faster, so the PS's pull of N packets takes at
least N / rate; without it the pull runs at line rate. Push and pull stages are recorded apart."""
from __future__ import annotations

from dataclasses import replace

import pytest

from controller.policy import load_policy
from experiments import config as configs
from experiments.backends.ns3 import harness
from sim import tcp
from sim.errors import SimError
from sim.network import SimNetwork, SimOptions
from sim.rounds import run_tcp_rounds
from topo.topologies import TopoParams, build_topology

GRADIENT = 144_800          # 100 segments of 1448 bytes per worker


def _pull_stages(options: SimOptions) -> list[float]:
    harness.seed_ns3(1)
    tcp.configure(tcp.TcpSettings(cc="cubic"))
    topo = build_topology("incast", TopoParams(workers=2, background=0, bottleneck_pps=None))
    net = SimNetwork(topo, load_policy("controller/policies/default.yaml"), options)
    try:
        out = run_tcp_rounds(net, "ps", ["w1", "w2"], GRADIENT, GRADIENT, rounds=2, limit_s=10)
    finally:
        net.close()
    assert out.complete and len(out.push_ends) == 2
    assert all(s < p < e for s, p, e in zip(out.starts, out.push_ends, out.ends))
    return [e - p for p, e in zip(out.push_ends, out.ends)]


def test_a_switch_rate_slows_the_pull_to_it():
    line = _pull_stages(SimOptions(rate_gbps=1.0))
    slow = _pull_stages(SimOptions(rate_gbps=1.0, switch_pps=10_000))
    assert all(t < 0.005 for t in line)
    assert all(t >= 2 * 100 / 10_000 for t in slow)


def test_the_config_sets_it_and_a_bad_rate_is_refused():
    cfg = configs.load(configs.default_path("ltp_incast"), quick=True)
    assert harness.sim_options(replace(cfg, params={**cfg.params, "sim_switch_pps": 23585})).switch_pps == 23585
    assert harness.sim_options(cfg).switch_pps is None
    with pytest.raises(SimError, match="sim_switch_pps"):
        harness.setup(replace(cfg, params={**cfg.params, "sim_switch_pps": 0}))
