"""The PCN experiment's summary and plots from records written the way the runner writes them
(no network): per DDL transport one row per paper figure, the queue-length rows as 'no PCN ->
PCN', the others as the per-repetition change of the PCN arm, the issue's bar per transport, and
every plot a PNG; and its analysis of what the agents logged (no network either)."""
from __future__ import annotations

import json

import pytest

from experiments import config as configs
from experiments import pcn
from experiments.pcn_measure import PcnSettings, analyse
from experiments.records import ResultsDir

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
ARMS = {"tcp-no-pcn": (20.0, 1.0), "tcp-pcn": (3.0, 0.8),
        "gradlane-no-pcn": (20.0, 0.5), "gradlane-pcn": (6.0, 0.5)}


def _metrics(start, completion):
    return {"start_queue_pkts": start, "max_queue_in_burst_pkts": 59.0, "burst_completion_s": completion,
            "ddl_throughput_mbps": 3.0 / completion, "queueing_delay_ms": 100.0,
            "background_throughput_mbps": 10.0, "ddl_retransmissions": 0.0, "late_bursts": 0}


@pytest.fixture
def results(tmp_path):
    rd = ResultsDir.create(tmp_path, "pcn")
    series_dir = rd.path / pcn.SERIES_DIR
    series_dir.mkdir()
    for rep in range(2):
        for arm, (start, completion) in ARMS.items():
            metrics = _metrics(start, completion)
            if arm.startswith("gradlane"):
                metrics.update(ddl_mark_cuts=40.0, ddl_loss_cuts=80.0, ddl_retransmissions=5.0)
            rel = f"{pcn.SERIES_DIR}/{arm}-rep{rep}.json"
            (rd.path / rel).write_text(json.dumps({"t0": 0.0, "ready_s": [0.0, 7.5], "queues": {
                "l1->r1": [[t / 10, (t * 3) % 41] for t in range(-70, 160)], "l2->r1": []}}))
            rd.append_run({"arm": arm, "rep": rep, "ok": True, "error": None, "elapsed_s": 1.0,
                           "metrics": metrics, "switch": {}, "queue_series": rel,
                           "conditions": {"switch_dropped": False}},
                          [{"round": 1, "t_s": 0.0, "round_time_s": completion,
                            "delivered": {"0": 1.0}, "violations": 0, "queue_depth": 59, "accuracy": None}])
    return rd


def test_rows_per_figure_and_transport_and_the_bar(results):
    config = configs.load(configs.default_path("pcn"))
    summary = pcn.summarize(results.load(), config)
    keys = [r.key for r in summary.rows]
    assert keys == [f.key for f in pcn.FIGURES for _ in range(2)]
    rows = {(r.key, r.ours.split(":")[0]): r for r in summary.rows}
    assert rows[("start_queue", "TCP")].ours == "TCP: 20 -> 3 (1/6.7)"
    assert rows[("start_queue", "gradlane UDP")].ours == "gradlane UDP: 20 -> 6 (1/3.3)"
    assert rows[("burst_completion", "TCP")].ours.startswith("TCP: -20 ± 0 % (n=2)")
    assert [t[0] for t in summary.tables[0].rows] == list(ARMS)
    tcp_bar, tcp_measured, gradlane_bar, gradlane_measured = summary.notes[:4]
    assert tcp_measured.startswith("Measured, DDL over TCP (no PCN -> PCN): start queue with PCN 3 packets")
    assert "window cuts" in gradlane_measured and "window cuts" not in tcp_measured
    assert "TCP: start queue 1/6.7 (meets <= 1/5)" in tcp_bar and "(shorter)" in tcp_bar
    assert "(misses <= 1/5; cause, measured: 1/5 needs <= 4 packets, and with PCN the queue before a " \
           "burst was 6 ± 0 (n=2)" in gradlane_bar
    assert ("not shorter beyond its sd; cause, measured: see the line below (with PCN the sender still "
            "halved its window on inferred loss 80 times per burst while resending 5 chunks)") in gradlane_bar


@pytest.mark.slow
def test_plots_are_pngs(results):
    config = configs.load(configs.default_path("pcn"))
    paths = pcn.plot(results.load(), config, results.path)
    assert {p.name for p in paths} >= {"queue_over_time.png", "start_queue.png", "background_throughput.png"}
    assert all(p.read_bytes()[:8] == PNG_MAGIC for p in paths)


class _Samples:
    """Queue samples as experiments.queue_sampler.QueueSampler keeps them."""

    def __init__(self, samples):
        self.queues = [type("Q", (), {"label": lab})() for lab in ("l1->r1", "l2->r1")]
        self.samples = samples
        self.errors = 0

    def series(self, label, since=0.0, until=float("inf")):
        return [(t, d) for t, lab, d in self.samples if lab == label and since <= t <= until]


def test_analysis_reads_each_burst_at_its_workers_uplink():
    # l1 holds 30 packets until t=100.5, then 5; the burst runs 100.6 -> 101.6 meeting 5, 12, 7
    samples = [(100.0 + i * 0.1, "l1->r1", d) for i, d in enumerate([30, 30, 30, 30, 30, 30, 5, 12, 7, 7])]
    samples += [(100.0 + i * 0.1, "l2->r1", 50) for i in range(20)]
    sent = [{"round": 1, "rank": 0, "bytes": 368000, "ready_t": 100.5, "first_t": 100.6, "done_t": 101.5,
             "completion_s": 1.0, "late_s": 0.0, "acked": True, "pcn_rtt_ms": 1.0, "retransmissions": 2}]
    sink = [{"t": 99.0, "bytes_by_peer": {"a": 0}}, {"t": 102.0, "bytes_by_peer": {"a": 3_000_000}}]
    records, metrics, series = analyse(PcnSettings(lead_ms=1000.0), True, sent, [], sink,
                                       _Samples(samples), {0: "l1->r1"}, start_at=100.5, end_t=102.0,
                                       uplink_pps=500.0)
    assert metrics["start_queue_pkts"] == 5       # the last sample at or before the first byte
    assert metrics["max_queue_in_burst_pkts"] == 12
    assert metrics["queueing_delay_ms"] == pytest.approx((5 + 12 + 7 + 7) / 4 / 500 * 1000)
    assert metrics["ddl_throughput_mbps"] == pytest.approx(368000 * 8 / 1e6)
    assert metrics["background_throughput_mbps"] == pytest.approx(8.0)   # 2.5 MB from 99.5 (lead) to 102
    assert metrics["ddl_retransmissions"] == 2 and metrics["bursts_recorded"] == 1
    assert records[0]["workers"][0]["tele_start_qdepth"] is None   # TCP: no telemetry
    assert series["ready_s"] == [0.0]
