"""Background traffic (sim/background.py, sim/cpp/background.h): Poisson TCP flows between random
host pairs with sizes from an empirical CDF, their completion times, seeded per run."""
from __future__ import annotations

import pytest

from controller.policy import load_policy
from experiments.backends.ns3 import dlcp_ablation, harness
from sim import background, tcp
from sim.errors import SimError
from sim.network import SimNetwork, SimOptions
from sim.topologies import leafspine

CDF = ((10_000.0, 0.0), (10_000.0, 0.5), (200_000.0, 1.0))   # half 10 kB, half 10-200 kB


def test_mean_and_arrival_rate_follow_the_cdf():
    # linear between points: 0.5 x 10 kB + 0.5 x (10 + 200) / 2 kB
    assert background.mean_size(CDF) == pytest.approx(57_500.0)
    settings = background.BackgroundSettings(load=0.2, size_cdf=CDF)
    # 4 hosts x 0.2 x 10 Gb/s / (8 x 57.5 kB)
    assert background.flows_per_s(settings, 4, 10e9) == pytest.approx(4 * 0.2 * 10e9 / (8 * 57_500.0))
    assert 1.5e6 < background.mean_size(background.WEB_SEARCH_CDF) < 1.8e6


@pytest.mark.parametrize("cdf, words", [([[1000, 0.2]], "at least two"), ([[1000, 0.5], [2000, 0.4]], "decrease"),
                                        ([[1000, 0.1], [2000, 0.9]], "ends at cdf 1"), ("web", "pairs")])
def test_bad_cdfs_are_refused(cdf, words):
    with pytest.raises(SimError, match=words):
        background.check_cdf(cdf)


def _flows(seed: int, load: float = 0.3) -> list[dict]:
    topo = leafspine(2, 2, 3)
    harness.seed_ns3(seed)
    tcp.configure(tcp.TcpSettings(cc="dctcp"))
    net = SimNetwork(topo, load_policy("controller/policies/default.yaml"), SimOptions())
    try:
        app = background.install(net, list(topo.hosts), background.BackgroundSettings(
            load=load, size_cdf=CDF, stop_s=0.004), 10e9)
        net.run(5.0)       # a flow whose SYN was lost waits ns-3's 3 s connection timeout
        return background.flows(app)
    finally:
        net.close()


def test_flows_arrive_complete_and_repeat_with_their_seed():
    flows = _flows(3)
    # 6 hosts x 0.3 x 10 Gb/s / (8 x 57.5 kB) = 39,000 flows/s: about 160 in 4 ms
    assert 100 < len(flows) < 250
    assert all(f["start"] < 0.004 and f["src"] != f["dst"] and 10_000 <= f["bytes"] <= 200_000 for f in flows)
    done = [f for f in flows if f["fct_s"] is not None]
    assert len(done) == len(flows)
    # no flow beats its bytes at the host's line rate
    assert all(f["fct_s"] > f["bytes"] * 8 / 10e9 for f in done)
    stats = dlcp_ablation.fct_stats(flows)
    assert stats["completed"] == len(flows) and stats["by_size"]["small <100 kB"]["flows"] > 0
    again, other = _flows(3), _flows(4)
    assert [(f["start"], f["bytes"], f["src"], f["dst"]) for f in again] == \
        [(f["start"], f["bytes"], f["src"], f["dst"]) for f in flows]
    assert [f["bytes"] for f in other] != [f["bytes"] for f in flows]
