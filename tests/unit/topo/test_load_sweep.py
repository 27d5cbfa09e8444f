"""The load sweep's logic without a network: the policy for N jobs, a job's figures from its PS
records, the knee rule, the order of cells and a row that stops growing at its knee, the table,
the CPU readers of /proc, and a bad flag as a one-line error."""
from __future__ import annotations

import os

import pytest

from topo import load_sweep, proc_stats
from topo.load_sweep import (cell_reasons, job_figures, next_cells, overlap, percentile, plan,
                              policy_document)
from topo.training import TrainingResult


def _result(rounds: list[dict], ok: bool = True) -> TrainingResult:
    recs = [{"event": "start", "config": {}}] + [{"event": "round", "round": i, "t": 100.0 + i, **r}
                                                 for i, r in enumerate(rounds)]
    return TrainingResult(exit_codes={"ps@h1": 0 if ok else 1}, records={"ps@h1": recs},
                          logs={"ps@h1": "/dev/null"}, elapsed_s=3.0)


def _round(time_s: float = 0.5, closed: str = "bound", tensor: float = 0.99, violations: int = 0) -> dict:
    return {"time_s": time_s, "closed_by": [closed], "delivered_tensor_min": tensor, "violations": [violations]}


def _cell(*jobs: dict) -> dict:
    return {"jobs_n": len(jobs), "workers": 2, "rounds": 6, "jobs": list(jobs), "round_mean_s": 0.5,
            "round_p90_s": 0.6, "most_side_by_side": 1, "side_by_side_share": 0.0, "switch_cpu_s": 1.0, "switch_cpu_pct": 10.0, "hosts_cpu_s": 2.0,
            "hosts_cpu_pct": 20.0, "machine_busy_pct": 50.0, "load_before": [1.0, 1, 1], "load_after": [2.0, 1, 1]}


def test_policy_alternates_the_two_jobs_tests_classes():
    doc = policy_document(3)
    assert [j["job"] for j in doc["jobs"]] == [1, 2, 3]
    assert [j["early_close"] for j in doc["jobs"]] == ["telemetry", "adaptive", "telemetry"]
    assert [j["layers"][0]["loss_bound"] for j in doc["jobs"]] == [0.10, 0.02, 0.10]
    assert [j["pcn"]["adapt"] for j in doc["jobs"]] == [True, False, True]


def test_job_figures_count_deadline_closes_violations_and_under_bound_rounds():
    rounds = [_round(0.4), _round(0.6, closed="deadline", tensor=0.5, violations=1), _round(1.0, tensor=0.95)]
    classes = [{"job": 2, "within_bound": False, "dropped": 3, "seen": 10},
               {"job": 1, "within_bound": True, "dropped": 9, "seen": 99}]
    f = job_figures(2, _result(rounds), classes)        # job 2: push bound 0.02
    assert f["rounds"] == 3 and f["deadline_rounds"] == 1 and f["violated_rounds"] == 1
    assert f["violations"] == 1
    assert f["under_bound_rounds"] == 1                 # 0.95 < 0.98, closed by the bound
    assert f["switch_out_of_bound"] == 1 and f["switch_dropped"] == 3 and f["switch_seen"] == 10
    assert f["round_s"] == [0.4, 0.6, 1.0]
    assert job_figures(1, _result(rounds), classes)["under_bound_rounds"] == 0   # bound 0.10


def test_knee_rule():
    good = job_figures(1, _result([_round()] * 6), [])
    assert cell_reasons(_cell(good, good), 6, 0.2) == []
    one_deadline = job_figures(1, _result([_round(closed="deadline")] + [_round()] * 5), [])
    assert cell_reasons(_cell(good, one_deadline), 6, 0.2) == []          # 1 of 6 <= 20 %
    two = job_figures(1, _result([_round(closed="deadline")] * 2 + [_round()] * 4), [])
    assert ["job 1: 2/6 rounds closed by deadline"] == cell_reasons(_cell(two), 6, 0.2)
    short = job_figures(1, _result([_round()] * 5, ok=False), [])
    assert cell_reasons(_cell(short), 6, 0.2) == ["job 1 failed (5/6 rounds; ps exit 1)"]
    broken = job_figures(2, _result([_round(tensor=0.9)] + [_round()] * 5), [])
    assert "under the bound" in cell_reasons(_cell(broken), 6, 0.2)[0]
    # a round closed without an absent worker is no broken bound, but counts towards the knee
    absent = job_figures(2, _result([_round(closed="absent", tensor=0.0)] * 2 + [_round()] * 4), [])
    assert absent["under_bound_rounds"] == 0 and absent["absent_rounds"] == 2
    assert cell_reasons(_cell(absent), 6, 0.2) == ["job 2: 2/6 rounds closed without a worker (absent)"]
    # rounds the PS ran on without a worker it counts absent (its `absent` list) count too
    gone = job_figures(1, _result([_round()] * 3 + [{**_round(), "absent": [1]}] * 3), [])
    assert gone["absent_rounds"] == 3


def test_rows_grow_until_their_knee():
    cells = plan([1, 2, 3], [4, 2])
    assert cells == [(1, 2), (2, 2), (3, 2), (1, 4), (2, 4), (3, 4)]
    done = {(1, 2): [], (2, 2): ["job 2: 3/6 rounds closed by deadline"]}
    assert next_cells(done, cells) == [(1, 4), (2, 4), (3, 4)]
    done[(1, 4)] = ["job 1 failed"]
    assert next_cells(done, cells) == []


def test_percentile_and_table():
    assert percentile([1.0, 2.0, 3.0, 4.0, 5.0], 0.9) == pytest.approx(4.6)
    assert percentile([], 0.9) != percentile([], 0.9)      # nan
    good = job_figures(1, _result([_round()] * 6), [])
    lines = load_sweep.table([_cell(good)], 0.2)
    assert lines[-1].startswith("| 1 x 2 | 6 | 0 | 0 | 0 | 0 |") and lines[-1].endswith("holds |")
    assert "1 at once, 0% of rounds" in lines[-1]


def test_overlap_of_jobs_training_side_by_side():
    a = {"round_t": [10.0, 11.0, 12.0, 13.0], "round_s": [1.0] * 4}      # trains 9..13
    b = {"round_t": [12.0, 13.0, 14.0], "round_s": [1.0] * 3}            # trains 11..14
    c = {"round_t": [20.0, 21.0], "round_s": [0.5, 0.5]}                 # trains 19.5..21
    assert overlap([a, b]) == {"most_side_by_side": 2, "side_by_side_share": round(5 / 7, 3)}
    assert overlap([a, c]) == {"most_side_by_side": 1, "side_by_side_share": 0.0}
    assert overlap([a, b, c])["most_side_by_side"] == 2
    assert overlap([a]) == {"most_side_by_side": 1, "side_by_side_share": 0.0}


def test_cpu_readers_of_proc():
    cpu = proc_stats.cpu_seconds(os.getpid())
    assert cpu is not None and cpu > 0
    assert proc_stats.cpu_seconds(2 ** 22 + 12345) is None
    busy, total = proc_stats.busy_jiffies()
    assert 0 < busy <= total


def test_bad_flags_are_one_line_errors(capsys):
    assert load_sweep.main(["--jobs", "0,2"]) == 2
    assert load_sweep.main(["--deadline-share", "1.5"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "--deadline-share" in err


def test_render_writes_the_summary_again(tmp_path, capsys):
    import json
    good = job_figures(1, _result([_round()] * 6), [])
    (tmp_path / "cells.jsonl").write_text(json.dumps(_cell(good)) + "\n")
    meta = {"command": "python -m topo.load_sweep", "commit": "abc1234", "started": "now", "cpus": 2,
            "rounds": 6, "bottleneck_pps": 2000.0, "deadline_share": 0.2, "load_start": [1, 1, 1],
            "load_end": [2, 2, 2], "switch": "embedded"}
    (tmp_path / "meta.json").write_text(json.dumps(meta))
    assert load_sweep.main(["--render", str(tmp_path)]) == 0
    text = (tmp_path / "summary.md").read_text()
    assert "2 workers per job: no knee within the grid" in text and "| 1 x 2 |" in text
    assert load_sweep.main(["--render", str(tmp_path / "missing")]) == 1
    assert "cannot read the sweep" in capsys.readouterr().err
