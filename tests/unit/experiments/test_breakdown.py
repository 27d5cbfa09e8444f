"""The per-round breakdown (experiments.breakdown): the workers' parts beside the round time and
the wire floor, from round records as the harness writes them."""
from __future__ import annotations

import subprocess
import sys

import pytest

from experiments import breakdown
from experiments.records import Results
from experiments.training import worker_breakdown
from topo.training import TrainingResult


def _round(rnd, round_time, **parts):
    return {"arm": "a", "rep": 0, "round": rnd, "round_time_s": round_time,
            "worker_breakdown": {p: parts.get(p) for p in breakdown.PARTS}}


def test_parts_other_and_floor_from_round_records():
    rounds = [_round(0, 9.0, push_s=9.0),        # round 0 is the PS's own time: left out
              _round(1, 0.5, compute_s=0.1, push_s=0.2, pull_s=0.1, control_s=0.0, wait_s=0.05),
              _round(2, 0.7, compute_s=0.1, push_s=0.4, pull_s=0.1, control_s=0.0, wait_s=0.05)]
    b = breakdown.of_rounds("a", rounds, breakdown.wire_floor_s(392, 3000))
    assert b.rounds == 2 and b.round_time_s == pytest.approx(0.6)
    assert b.parts["push_s"] == pytest.approx(0.3) and b.parts["compute_s"] == pytest.approx(0.1)
    assert b.other_s == pytest.approx(0.6 - 0.1 - 0.3 - 0.1 - 0.0 - 0.05)
    assert b.floor_s == pytest.approx(392 / 3000)
    row = breakdown.table_rows([b])[0]
    assert row[0] == "a" and row[2] == "600.0" and row[-1] == f"{0.6 / (392 / 3000):.2f}x"


def test_agents_that_split_only_push_and_pull_leave_the_rest_as_other():
    b = breakdown.of_rounds("a", [_round(1, 1.0, push_s=0.3, pull_s=0.2)], None)
    assert b.parts["compute_s"] is None and b.parts["wait_s"] is None
    assert b.other_s == pytest.approx(0.5) and b.floor_s is None
    assert breakdown.table_rows([b])[0][3] == "n/a"         # compute not reported
    assert breakdown.wire_floor_s(None, 3000) is None and breakdown.wire_floor_s(100, None) is None


def test_per_arm_uses_finished_runs_and_each_arms_bottleneck(tmp_path):
    runs = [{"arm": "x", "rep": 0, "ok": True, "metrics": {"push_packets_per_round": 300}},
            {"arm": "y", "rep": 0, "ok": False, "metrics": {}}]
    rounds = [{**_round(1, 0.2, push_s=0.1), "arm": "x"}, {**_round(1, 5.0, push_s=1.0), "arm": "y"}]
    parts = breakdown.per_arm(Results(runs=runs, rounds=rounds), {"x": 1500.0})
    assert [b.arm for b in parts] == ["x"] and parts[0].floor_s == pytest.approx(0.2)
    png = breakdown.plot(parts, tmp_path / "b.png")
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_worker_breakdown_is_the_mean_over_workers_per_round():
    result = TrainingResult(exit_codes={}, logs={}, elapsed_s=1.0, records={
        "ps": [{"event": "round", "round": 0}],
        "worker0": [{"event": "round", "round": 0, "push_s": 0.2, "compute_s": 0.1}],
        "worker1": [{"event": "round", "round": 0, "push_s": 0.4, "compute_s": "x"}]})
    parts = worker_breakdown(result)[0]
    assert parts["push_s"] == pytest.approx(0.3) and parts["compute_s"] == pytest.approx(0.1)
    assert parts["pull_s"] is None


@pytest.mark.slow
def test_profile_and_bounds_modules_do_not_import_each_other_at_run_time():
    code = ("import sys, experiments.plot_profile as p; "
            "assert 'experiments.plot_bounds' not in sys.modules; print('ok')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr


def test_every_summary_states_what_each_arms_push_and_pull_may_lose():
    from experiments import report

    runs = [{"arm": "gradlane", "rep": 0, "ok": True, "transport": "ltp",
             "metrics": {"push_bounds": [0.1, 0.1], "pull_bounds": [0.0, 0.0]}},
            {"arm": "mlt", "rep": 0, "ok": True, "transport": "mlt",
             "metrics": {"push_bounds": [0.1, 0.1], "pull_bounds": [0.1, 0.1], "bound_scope": "tensor"}},
            {"arm": "plot", "rep": 0, "ok": True, "transport": "ltp",
             "metrics": {"push_bounds": [0.2, 0.05], "pull_bounds": [0.05, 0.0125], "bound_scope": "layer"}},
            {"arm": "tcp", "rep": 0, "ok": True, "transport": "tcp",
             "metrics": {"push_bounds": [0.1, 0.1], "pull_bounds": [0.025, 0.025]}}]
    rows = {r[0]: r for r in report.semantics_table(Results(runs=runs, rounds=[])).rows}
    assert rows["gradlane"][2:] == ["10%, 10%", "reliable (0 on every layer)"]
    assert rows["plot"][2] == "20%, 5% per layer"
    assert rows["mlt"][3] == "10% of the tensor" and rows["tcp"][2:] == ["reliable (TCP)", "reliable (TCP)"]
