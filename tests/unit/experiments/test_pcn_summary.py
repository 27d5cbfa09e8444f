"""The PCN experiment's summary and plots from records written the way the runner writes them
(no network): one row per paper figure, the queue-length rows as 'no PCN -> PCN', the others as
the per-repetition change of the PCN arm, and every plot a PNG."""
from __future__ import annotations

import json

import pytest

from experiments import config as configs
from experiments import pcn
from experiments.records import ResultsDir
from experiments.stats import Stat

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _metrics(start, completion, bg):
    return {"start_queue_pkts": start, "max_queue_in_burst_pkts": 59.0, "burst_completion_s": completion,
            "ddl_throughput_mbps": 4.0, "queueing_delay_ms": 100.0, "background_throughput_mbps": bg,
            "ddl_delivered_fraction": 0.9}


@pytest.fixture
def results(tmp_path):
    rd = ResultsDir.create(tmp_path, "pcn")
    series_dir = rd.path / pcn.SERIES_DIR
    series_dir.mkdir()
    for rep in range(2):
        for arm, metrics in (("no-pcn", _metrics(20.0, 0.5, 10.0)), ("pcn", _metrics(5.0, 0.4, 9.0))):
            rel = f"{pcn.SERIES_DIR}/{arm}-rep{rep}.json"
            (rd.path / rel).write_text(json.dumps({"t0": 0.0, "ready_s": [0.0, 7.5], "queues": {
                "l1->r1": [[t / 10, (t * 3) % 41] for t in range(-70, 160)], "l2->r1": []}}))
            rd.append_run({"arm": arm, "rep": rep, "ok": True, "error": None, "elapsed_s": 1.0,
                           "metrics": metrics, "switch": {}, "queue_series": rel,
                           "conditions": {"switch_dropped": False}},
                          [{"round": 1, "t_s": 0.0, "round_time_s": metrics["burst_completion_s"],
                            "delivered": {"0": 0.9}, "violations": 2, "queue_depth": 59, "accuracy": None}])
    return rd


def test_one_row_per_figure_and_the_pcn_change(results):
    config = configs.load(configs.default_path("pcn"))
    summary = pcn.summarize(results.load(), config)
    rows = {r.key: r for r in summary.rows}
    assert list(rows) == [f.key for f in pcn.FIGURES]
    assert rows["start_queue"].ours.startswith("20 -> 5 (1/4")
    completion = rows["burst_completion"].ours
    assert isinstance(completion, Stat) and completion.n == 2
    assert completion.mean == pytest.approx(-20.0)
    assert rows["background_throughput"].ours.mean == pytest.approx(-10.0)
    assert [t[0] for t in summary.tables[0].rows] == ["no-pcn", "pcn"]


def test_plots_are_pngs(results):
    config = configs.load(configs.default_path("pcn"))
    paths = pcn.plot(results.load(), config, results.path)
    assert {p.name for p in paths} >= {"queue_over_time.png", "start_queue.png", "background_throughput.png"}
    assert all(p.read_bytes()[:8] == PNG_MAGIC for p in paths)
