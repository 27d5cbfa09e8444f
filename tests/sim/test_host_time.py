"""The host software time model (`SimOptions.host_rx_us` / `host_tx_us`, off by default): each
simulated agent is one serial server that spends that time on every datagram it receives or
sends, so the PS's pull of N datagrams takes at least N x its send time; without it hosts answer
instantly. The config's `params.sim_host_rx_us` / `sim_host_tx_us` set it."""
from __future__ import annotations

from dataclasses import replace

import pytest

from controller.policy import load_policy
from experiments import config as configs
from experiments.backends.ns3 import harness
from sim.errors import SimError
from sim.lossy import run_lossy_rounds, transport_config
from sim.network import SimNetwork, SimOptions
from sim.rounds import model_layer_sizes
from controller.topologies import TopoParams, build_topology

SIZES = model_layer_sizes("128,64")           # 49 DATA packets of 360 values per push and pull
FLAGS = ["--bound", "0.1", "--bound-scope", "tensor", "--window", "10", "--reliable-pull"]


def _pulls(options: SimOptions) -> list[float]:
    topo = build_topology("incast", TopoParams(workers=2, background=0, bottleneck_pps=None))
    harness.seed_ns3(1)
    config = transport_config("ltp", FLAGS, len(SIZES), 360, 1)
    net = SimNetwork(topo, load_policy("controller/policies/default.yaml"), options)
    try:
        out = run_lossy_rounds(net, "ps", ["w1", "w2"], config, SIZES, 2, limit_s=20.0, seed=1)
    finally:
        net.close()
    assert out.complete, out.error
    return [r.worker_breakdown["pull_s"] for r in out.rounds]


def test_the_ps_sends_its_pull_one_datagram_at_a_time():
    instant = _pulls(SimOptions(rate_gbps=1.0))
    tx_s = 500e-6
    served = _pulls(SimOptions(rate_gbps=1.0, host_tx_us=tx_s * 1e6, host_rx_us=100.0))
    assert all(t < 0.005 for t in instant)
    # 2 x 49 pull packets leave the PS one after another, interleaved between the workers, so a
    # worker's first to last packet spans all of them but the other worker's first and last: at
    # least 96 sends; at most all 98 plus the repair and ACK round trips at the end (10 ms)
    assert all(t >= 96 * tx_s for t in served)
    assert all(t < 98 * tx_s + 0.010 for t in served)


def test_the_config_sets_it_and_a_bad_time_is_refused():
    cfg = configs.load(configs.default_path("ltp_incast"), quick=True)
    options = harness.sim_options(replace(cfg, params={**cfg.params, "sim_host_rx_us": 15.2, "sim_host_tx_us": 17.9}))
    assert (options.host_rx_us, options.host_tx_us) == (15.2, 17.9)
    assert (harness.sim_options(cfg).host_rx_us, harness.sim_options(cfg).host_tx_us) == (0.0, 0.0)
    with pytest.raises(SimError, match="sim_host_tx_us"):
        harness.setup(replace(cfg, params={**cfg.params, "sim_host_tx_us": -1}))
