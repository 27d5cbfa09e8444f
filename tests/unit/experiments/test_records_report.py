"""Results records, statistics and the summary/plots of an experiment module, from records
written the way the runner writes them (no network)."""
from __future__ import annotations

import math

import pytest

from experiments import config as configs
from experiments import ltp_incast, report
from experiments.records import ROUND_FIELDS, ResultsDir
from experiments.stats import percentile, summarize


def test_stats_mean_sd_and_percentiles():
    s = summarize([1.0, 2.0, 3.0, None, float("nan")])
    assert (s.mean, s.n, s.lo, s.hi) == (2.0, 3, 1.0, 3.0) and s.sd == pytest.approx(1.0)
    assert s.fmt(3) == "2 ± 1 (n=3)"
    assert summarize([]).fmt() == "n/a"
    assert percentile(range(1, 101), 50) == pytest.approx(50.5)
    assert percentile([5.0], 99) == 5.0 and math.isnan(percentile([], 50))


def _run(arm, rep, rps, p99, tta, acc, dropped=False):
    return {"arm": arm, "rep": rep, "ok": True, "error": None, "elapsed_s": 1.0,
            "metrics": {"rounds_per_s": rps, "round_time_p99_s": p99, "round_time_p50_s": p99 / 2,
                        "time_to_target_s": tta, "final_accuracy": acc, "violations": 0},
            "switch": {"queue_tail_drops": {"s1": 10}}, "conditions": {
                "load1_end": 1.0, "switch_rx_drops_total": 3 if dropped else 0,
                "switch_cpu_pct_max": 20.0, "switch_dropped": dropped}}


def _rounds(arm, rep, n, dt):
    return [{"round": i, "t_s": (i + 1) * dt, "round_time_s": dt, "delivered": [1.0],
             "violations": 0, "accuracy": 0.5 + 0.1 * i if i % 2 else None} for i in range(n)]


@pytest.fixture
def results_dir(tmp_path):
    rd = ResultsDir.create(tmp_path, "ltp_incast")
    for rep in range(3):
        rd.append_run(_run("gradlane", rep, 5.0, 0.2, 1.0, 0.9), _rounds("gradlane", rep, 6, 0.2))
        rd.append_run(_run("mlt", rep, 4.0, 0.3, 2.0, 0.9), _rounds("mlt", rep, 6, 0.25))
        rd.append_run(_run("tcp-cubic", rep, 1.0, 2.0, None, 0.89, dropped=(rep == 1)),
                      _rounds("tcp-cubic", rep, 6, 1.0))
    return rd


def _config():
    raw = {"name": "ltp_incast", "topology": {"workers": 8}, "params": {"target_accuracy": 0.8},
           "arms": [{"name": "gradlane"}, {"name": "mlt", "transport": "mlt"},
                    {"name": "tcp-cubic", "transport": "tcp", "tcp_cc": "cubic"}]}
    return configs.from_dict(raw, "t.yaml")


def test_records_have_the_required_fields_and_resume_sees_finished_runs(results_dir):
    results = results_dir.load()
    assert len(results.runs) == 9 and results.arms() == ["gradlane", "mlt", "tcp-cubic"]
    assert all(set(ROUND_FIELDS) <= set(r) for r in results.rounds)
    assert ("mlt", 2) in results_dir.completed()
    assert results.metric("tcp-cubic", "time_to_target_s") == []
    assert results.switch_dropped("tcp-cubic") and not results.switch_dropped("gradlane")
    # a half-written run (rounds without a run record) is not part of the results
    with results_dir.rounds_path.open("a") as f:
        f.write('{"arm": "gradlane", "rep": 7, "round": 0}\n{"arm": "grad')
    assert len(results_dir.load().rounds) == len(results.rounds)


@pytest.mark.slow
def test_summary_has_a_row_per_figure_flags_and_plots(results_dir):
    cfg = _config()
    summary_path, plots = report.finish(ltp_incast, cfg, results_dir)
    text = summary_path.read_text()
    for figure in ltp_incast.FIGURES:
        assert f"| {figure.label} |" in text
    assert "| training throughput (rounds/s), gradlane / best TCP | up to 30x | 5 ± 0 x (n=3)" in text
    assert report.FLAG in text          # tcp-cubic rep 2: the switch process dropped packets
    assert plots and all(p.read_bytes()[:4] == b"\x89PNG" for p in plots)
    dest = report.publish("ltp_incast", results_dir, plots, root=results_dir.path / "pub")
    assert (dest / "summary.md").is_file() and len(list(dest.glob("*.png"))) == len(plots)


def test_runner_plan_alternates_arms_caps_repetitions_and_skips_recorded_runs(tmp_path):
    from experiments.backends.emulation import Runner

    raw = {"name": "ltp_incast", "repetitions": 3,
           "arms": [{"name": "a"}, {"name": "b", "transport": "mlt"}, {"name": "w2", "repetitions": 1}]}
    cfg = configs.from_dict(raw, "t.yaml")
    rd = ResultsDir.create(tmp_path, "ltp_incast")
    runner = Runner(ltp_incast, cfg, rd)
    assert [(rep, arm.name) for rep, arm in runner.plan()] == [
        (0, "a"), (0, "b"), (0, "w2"), (1, "a"), (1, "b"), (2, "a"), (2, "b")]
    rd.append_run(_run("a", 0, 1.0, 1.0, 1.0, 0.9), [])
    rd.append_run(_run("b", 0, 1.0, 1.0, 1.0, 0.9), [])
    assert [(rep, arm.name) for rep, arm in runner.plan()][:2] == [(0, "w2"), (1, "a")]


def test_job_settings_carry_the_arms_transport_seed_packet_size_and_cc():
    from experiments.backends.emulation import job_settings, session_config

    raw = {"name": "x", "chunk_elems": 360, "agent_args": ["--probe-ms", "30"],
           "topology": {"workers": 4, "bottleneck_pps": 2000, "queue_depth": 32},
           "arms": [{"name": "t", "transport": "tcp", "tcp_cc": "cubic", "tcp_ecn": "on", "rounds": 7}]}
    cfg = configs.from_dict(raw, "t.yaml")
    arm = cfg.arms[0]
    base = session_config(cfg, cfg.topology_of(arm), "build", "logs")
    assert (base.params.workers, base.params.bottleneck_pps, base.params.queue_depth) == (4, 2000, 32)
    run = job_settings(base, cfg, arm, seed=5)
    assert (run.transport, run.tcp_ecn, run.rounds) == ("tcp", "on", 7)
    assert run.agent_args == ("--seed", "5", "--chunk-elems", "360", "--probe-ms", "30", "--tcp-cc", "cubic")
