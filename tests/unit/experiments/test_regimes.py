"""The regime map without a network: its grid and arms, Mathis' prediction, the per-cell maps
against the best TCP, the rto_min route commands, and its summary and heatmaps."""
from __future__ import annotations

import math

import pytest

from experiments import config as configs
from experiments import mathis, regimes, report, route_rto
from experiments.errors import ConfigError, ExperimentError
from experiments.records import ResultsDir


def _cfg(**grid):
    raw = {"name": "regimes", "rounds": 3, "chunk_elems": 360,
           "topology": {"name": "incast", "workers": 8, "bottleneck_pps": 3000},
           "params": {"grid": {"loss_pct": [0, 2], "bdp_packets": [5, 100], **grid}},
           "arms": [{"name": "gradlane", "transport": "ltp", "agent_args": ["--bound", "0.1"]},
                    {"name": "mlt", "transport": "mlt", "agent_args": ["--bound", "0.1"]},
                    {"name": "tcp-cubic", "transport": "tcp", "tcp_cc": "cubic"},
                    {"name": "tcp-cubic-rto", "transport": "tcp", "tcp_cc": "cubic",
                     "params": {"rto_min_rtts": 3}}]}
    return regimes.setup(configs.from_dict(raw, "t.yaml"))


def test_every_template_runs_in_every_cell_with_the_cells_path():
    cfg = _cfg()
    assert len(cfg.arms) == 4 * 2 * 2 and cfg.params["templates"][0] == "gradlane"
    arm = cfg.arm("tcp-cubic-rto.l2.b100")
    topo = cfg.topology_of(arm)
    # 100 packets in flight at 3000 packets/s: RTT 33.3 ms, i.e. 16.7 ms each way
    assert topo.loss_pct == 2 and topo.delay_ms == pytest.approx(16.667, abs=1e-3)
    assert arm.params["rtt_ms"] == pytest.approx(33.333, abs=1e-2)
    assert arm.params["rto_min_ms"] == pytest.approx(100.0)         # 3 RTTs
    assert "rto_min_ms" not in cfg.arm("tcp-cubic.l2.b100").params
    assert cfg.arm("gradlane.l0.b5").agent_args == cfg.arm("mlt.l0.b5").agent_args     # one bound
    assert regimes.setup(cfg) is cfg                                 # a saved config stays as it is


def test_the_shipped_config_has_the_issue_grid_and_arms():
    cfg = regimes.setup(configs.load(configs.default_path("regimes")))
    losses, bdps = regimes.grid(cfg)
    assert losses == [0, 0.5, 1, 2, 5] and bdps == [5, 25, 100] and cfg.repetitions >= 3
    assert cfg.topology.workers == 8 and len(cfg.arms) == 15 * 5
    quick = regimes.setup(configs.load(configs.default_path("regimes"), quick=True))
    assert len(quick.arms) < len(cfg.arms) and quick.repetitions == 1


@pytest.mark.parametrize("grid", [{"loss_pct": []}, {"bdp_packets": [0]}, {"loss_pct": ["x"]}])
def test_a_bad_grid_is_one_config_error(grid):
    with pytest.raises(ConfigError, match="params.grid"):
        _cfg(**grid)


def test_mathis_law():
    assert mathis.tcp_rate_pps(0.01, 0.01) == pytest.approx(math.sqrt(1.5) / (0.01 * 0.1))
    assert mathis.tcp_rate_pps(0.01, 0.0) == math.inf
    assert mathis.tcp_share(0.01, 0.0, 8, 3000) == 1.0
    # 100 packets in flight at 1 % loss: one flow fills about 1.22 / (0.1 x 100) of the line
    assert mathis.tcp_share(mathis.rtt_for_bdp(100, 3000), 0.01, 1, 3000) == pytest.approx(0.1225, abs=1e-3)
    with pytest.raises(ValueError):
        mathis.tcp_rate_pps(0.0, 0.01)
    shares = regimes.mathis_cells(_cfg())
    assert shares[regimes.Cell(0, 100)] == 1.0 and shares[regimes.Cell(2, 100)] < shares[regimes.Cell(2, 5)]


def _run(arm, rep, rps, p99, acc):
    return {"arm": arm, "rep": rep, "ok": True, "error": None, "elapsed_s": 1.0, "switch": {},
            "conditions": {"load1_end": 1.0, "switch_dropped": False},
            "metrics": {"rounds_per_s": rps, "round_time_p99_s": p99, "final_accuracy": acc,
                        "base_rtt_ms": 2.0, "retransmissions": 0, "push_packets_per_round": 392}}


def _results(tmp_path, cfg):
    rd = ResultsDir.create(tmp_path / "res", "regimes")
    speeds = {"gradlane": 4.0, "mlt": 3.0, "tcp-cubic": 1.0, "tcp-cubic-rto": 2.0}
    for rep in range(3):
        for arm in cfg.arms:
            t = arm.params["template"]
            lossy = arm.params["loss_pct"] > 0
            rps = speeds[t] if lossy else 2.0
            acc = 0.90 if t != "tcp-cubic" else 0.91
            rd.append_run(_run(arm.name, rep, rps, 1.0 / rps, acc),
                          [{"arm": arm.name, "rep": rep, "round": i, "t_s": i / rps, "round_time_s": 1.0 / rps,
                            "worker_breakdown": {"push_s": 0.2 / rps},
                            "closed_by": ["bound"] if t == "gradlane" and lossy and i % 2 else ["complete"]}
                           for i in range(4)])
    return rd


def test_maps_compare_with_the_best_tcp_of_each_cell(tmp_path):
    cfg = _cfg()
    results = _results(tmp_path, cfg).load()
    tput = regimes.cell_values(results, cfg, "throughput")
    values, base = tput[regimes.Cell(2, 100)]
    assert base == "tcp-cubic-rto" and values == pytest.approx([2.0, 2.0, 2.0])   # 4 / 2, per rep
    assert tput[regimes.Cell(0, 5)][0] == pytest.approx([1.0] * 3)
    p99 = regimes.cell_values(results, cfg, "p99")[regimes.Cell(2, 5)]
    assert p99[0] == pytest.approx([2.0] * 3)
    acc = regimes.cell_values(results, cfg, "accuracy")[regimes.Cell(2, 5)]
    assert acc[1] == "tcp-cubic" and acc[0] == pytest.approx([-1.0] * 3)           # points
    assert regimes.cell_values(results, cfg, "mlt")[regimes.Cell(2, 5)][0] == pytest.approx([4 / 3] * 3)
    # both TCP baselines, each its own map: the kernel's RTO (tcp-cubic) and the tuned RTO
    kernel = regimes.cell_values(results, cfg, "kernel")[regimes.Cell(2, 100)]
    tuned = regimes.cell_values(results, cfg, "tuned")[regimes.Cell(2, 100)]
    assert kernel == (pytest.approx([4.0] * 3), "tcp-cubic") and tuned == (pytest.approx([2.0] * 3), "tcp-cubic-rto")


def test_the_summary_shows_both_tcp_baselines_per_cell_side_by_side(tmp_path):
    cfg = _cfg()
    text = report.finish(regimes, cfg, _results(tmp_path, cfg))[0].read_text()
    lines = text.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("## Per cell, rounds/s"))
    assert lines[head + 2] == ("| loss % | BDP | gradlane | MLT | TCP (kernel RTO) | TCP (tuned RTO) | gradlane / MLT "
                               "| gradlane / TCP (kernel RTO) | gradlane / TCP (tuned RTO) |")
    assert ("| 2 | 100 | 4 ± 0 (n=3) | 3 ± 0 (n=3) | 1 ± 0 (n=3) (tcp-cubic) | 2 ± 0 (n=3) (tcp-cubic-rto) "
            "| 1.33 ± 0 (n=3) vs mlt | 4 ± 0 (n=3) vs tcp-cubic | 2 ± 0 (n=3) vs tcp-cubic-rto |") in lines
    # the headline: where loss matters (the one cell l2.b100), against each baseline
    assert "| rounds/s, gradlane / TCP at the kernel's RTO, where loss matters | LTP: up to 30x vs TCP | 4 ± 0 x (n=3) |" in text
    assert "| rounds/s, gradlane / TCP at a tuned RTO, where loss matters | n/a | 2 ± 0 x (n=3) |" in text
    assert "## gradlane against both TCP baselines" not in text      # per cell here, not per arm


def test_a_run_without_the_tuned_arm_says_so_per_cell(tmp_path):
    cfg = _cfg()
    rd = ResultsDir.create(tmp_path / "res", "regimes")
    for arm in cfg.arms:
        if arm.params["template"] != "tcp-cubic-rto":
            rd.append_run(_run(arm.name, 0, 2.0, 0.5, None), [])
    table = regimes.baselines_table(rd.load(), cfg, {k: regimes.cell_values(rd.load(), cfg, k)
                                                     for k in ("mlt", "kernel", "tuned")})
    assert table.rows[0][4:] == ["2 (n=1) (tcp-cubic)", "n/a", "1 (n=1) vs mlt", "1 (n=1) vs tcp-cubic", "n/a"]


@pytest.mark.slow
def test_summary_rows_tables_and_heatmaps(tmp_path):
    cfg = _cfg()
    rd = _results(tmp_path, cfg)
    summary_path, pngs = report.finish(regimes, cfg, rd)
    text = summary_path.read_text()
    for figure in regimes.FIGURES:
        assert f"| {figure.label} |" in text
    assert "| 2 ± 0 x (n=3) |" in text              # gain where loss matters: the one cell l2.b100
    assert "Mathis' law" in text and "Where each paper's setting lies" in text
    assert "| gradlane.l2.b100 | 9 | 250.0 | n/a | 50.0 |" in text      # breakdown: rounds 1-3 x 3 reps
    assert "| 6/12 |" in text and "| 0/12 |" in text                  # pushes closed by the bound
    names = {p.name for p in pngs}
    assert {"map_throughput.png", "map_p99.png", "map_accuracy.png", "map_mathis.png",
            "round_breakdown.png"} <= names
    assert all(p.read_bytes()[:4] == b"\x89PNG" for p in pngs)


def test_route_commands_name_each_route_and_refusals_are_one_line():
    default = {"dst": "default", "gateway": "10.0.1.254", "dev": "w1-eth0", "flags": []}
    link = {"dst": "10.0.1.0/24", "dev": "w1-eth0", "protocol": "kernel", "scope": "link",
            "prefsrc": "10.0.1.1", "flags": ["linkdown"], "metrics": [{"rto_min": 7}]}
    assert route_rto.route_spec(default) == ["default", "via", "10.0.1.254", "dev", "w1-eth0"]
    assert route_rto.route_spec(link) == ["10.0.1.0/24", "dev", "w1-eth0", "proto", "kernel",
                                          "scope", "link", "src", "10.0.1.1"]
    with pytest.raises(ExperimentError):
        route_rto.route_spec({"gateway": "x"})


def test_the_measured_rtt_is_pings_minimum():
    out = ("5 packets transmitted, 5 received, 0% packet loss, time 801ms\n"
           "rtt min/avg/max/mdev = 2.712/3.050/3.901/0.431 ms\n")
    assert regimes.ping_min_ms(out) == pytest.approx(2.712)
    assert regimes.ping_min_ms("5 packets transmitted, 0 received, 100% packet loss") is None


def test_a_tuned_rto_needs_a_tcp_arm():
    raw = {"name": "regimes", "topology": {"name": "incast", "workers": 8, "bottleneck_pps": 3000},
           "params": {"grid": {"loss_pct": [0], "bdp_packets": [5]}},
           "arms": [{"name": "udp", "transport": "mlt", "params": {"rto_min_rtts": 3}}]}
    with pytest.raises(ConfigError, match="rto_min_rtts needs transport tcp"):
        regimes.setup(configs.from_dict(raw, "t.yaml"))
