"""gradlane against both TCP baselines, side by side: which TCP arm is the kernel's RTO and
which the tuned one, the best of each kind, the ratios paired by repetition, and the table every
summary gets (from records written the way the runner writes them; no network)."""
from __future__ import annotations

import pytest

from experiments import config as configs
from experiments import ltp_incast, report, tcp_baselines
from experiments.records import ResultsDir


def _config(tuned=True):
    arms = [{"name": "gradlane"}, {"name": "gradlane-2w", "workers": 2},
            {"name": "mlt", "transport": "mlt"},
            {"name": "tcp-reno", "transport": "tcp", "tcp_cc": "reno"},
            {"name": "tcp-cubic", "transport": "tcp", "tcp_cc": "cubic"},
            {"name": "tcp-cubic-2w", "transport": "tcp", "tcp_cc": "cubic", "workers": 2}]
    if tuned:
        arms.append({"name": "tcp-cubic-rto", "transport": "tcp", "tcp_cc": "cubic",
                     "params": {"rto_min_ms": 0.2}})
    raw = {"name": "ltp_incast", "topology": {"workers": 8}, "params": {"target_accuracy": 0.8}, "arms": arms}
    return configs.from_dict(raw, "t.yaml")


# rounds/s per repetition: gradlane's third repetition is faster, so pairing by repetition shows
RATES = {"gradlane": [6.0, 6.0, 9.0], "gradlane-2w": [8.0] * 3, "mlt": [5.0] * 3, "tcp-reno": [1.0] * 3,
         "tcp-cubic": [2.0] * 3, "tcp-cubic-2w": [4.0] * 3, "tcp-cubic-rto": [3.0] * 3}


def _results_dir(tmp_path, cfg):
    rd = ResultsDir.create(tmp_path, "ltp_incast")
    for rep in range(3):
        for arm in cfg.arms:
            rps = RATES[arm.name][rep]
            rd.append_run({"arm": arm.name, "rep": rep, "ok": True, "error": None, "elapsed_s": 1.0,
                           "metrics": {"rounds_per_s": rps, "round_time_p99_s": 1 / rps, "round_time_p50_s": 1 / rps,
                                       "time_to_target_s": None, "final_accuracy": None, "violations": 0},
                           "switch": {}, "conditions": {"load1_end": 1.0, "switch_dropped": False}},
                          [{"round": i, "t_s": (i + 1) / rps, "round_time_s": 1 / rps, "delivered": [1.0],
                            "violations": 0, "accuracy": None} for i in range(3)])
    return rd


def test_a_tcp_arm_with_its_own_rto_min_is_the_tuned_baseline():
    cfg = _config()
    assert tcp_baselines.rto_kind(cfg.arm("tcp-cubic-rto")) == "tuned"
    assert tcp_baselines.rto_kind(cfg.arm("tcp-cubic")) == "kernel"
    assert tcp_baselines.rto_kind(cfg.arm("mlt")) is None
    emulated = configs.from_dict({"name": "regimes", "arms": [
        {"name": "t", "transport": "tcp", "params": {"rto_min_rtts": 3}}]}, "t.yaml")
    assert tcp_baselines.rto_kind(emulated.arm("t")) == "tuned"


def test_the_best_arm_of_each_kind_and_ratios_paired_by_repetition(tmp_path):
    cfg = _config()
    results = _results_dir(tmp_path, cfg).load()
    best = tcp_baselines.best_by_kind(results, cfg, ["gradlane", "mlt", "tcp-reno", "tcp-cubic", "tcp-cubic-rto"])
    assert best == {"kernel": "tcp-cubic", "tuned": "tcp-cubic-rto"}      # cubic 2.0 beats reno 1.0
    ratio = tcp_baselines.ratio(results, "gradlane", "tcp-cubic")
    assert (ratio.mean, ratio.n) == (pytest.approx(3.5), 3) and ratio.hi == pytest.approx(4.5)
    texts = tcp_baselines.ratio_texts(results, cfg, "gradlane", ["tcp-cubic", "tcp-cubic-rto"])
    assert texts == ["3.5 ± 0.866 x (n=3) vs tcp-cubic", "2.33 ± 0.577 x (n=3) vs tcp-cubic-rto"]
    assert tcp_baselines.ratio_texts(results, cfg, "gradlane", ["tcp-cubic"])[1] == "n/a (no such arm)"


def test_every_summary_shows_both_baselines_beside_each_other(tmp_path):
    cfg = _config()
    rd = _results_dir(tmp_path, cfg)
    path, _ = report.finish(ltp_incast, cfg, rd)
    lines = path.read_text().splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("## gradlane against both TCP baselines"))
    assert lines[head + 2] == ("| arm | gradlane rounds/s | TCP (kernel RTO) rounds/s | TCP (tuned RTO) rounds/s "
                               "| gradlane / TCP (kernel RTO) | gradlane / TCP (tuned RTO) |")
    # gradlane at 8 workers: against the 8-worker TCP arms only; the 2-worker arm against its own
    assert lines[head + 4] == ("| gradlane | 7 ± 1.73 (n=3) | 2 (tcp-cubic) | 3 (tcp-cubic-rto) "
                               "| 3.5 ± 0.866 x (n=3) vs tcp-cubic | 2.33 ± 0.577 x (n=3) vs tcp-cubic-rto |")
    assert lines[head + 5] == ("| gradlane-2w | 8 ± 0 (n=3) | 4 (tcp-cubic-2w) | n/a "
                               "| 2 ± 0 x (n=3) vs tcp-cubic-2w | n/a (no such arm) |")


def test_a_run_without_tcp_or_gradlane_gets_no_baselines_table(tmp_path):
    cfg = configs.from_dict({"name": "ltp_incast", "topology": {"workers": 8},
                             "arms": [{"name": "gradlane"}, {"name": "mlt", "transport": "mlt"}]}, "t.yaml")
    rd = ResultsDir.create(tmp_path, "ltp_incast")
    for arm in ("gradlane", "mlt"):
        rd.append_run({"arm": arm, "rep": 0, "ok": True, "error": None, "elapsed_s": 1.0,
                       "metrics": {"rounds_per_s": 1.0}, "switch": {}, "conditions": {}}, [])
    assert tcp_baselines.table(rd.load(), cfg) is None
