"""Experiment 5 (PCN, Sensors 2021), the measurement: one repetition of one arm on a running
PCN tree. Kept apart from experiments/pcn.py (figures, summary, plots) so it can be checked
against a running session on its own.

One repetition: a TCP sink on `bs` (reporting bytes per peer) and ECN-capable Reno flows from
every background host (3 per leaf) warm up; the PS answers PCN-START, drains the workers' TCP
bursts and receives their gradlane-transport bursts (`hosts.pcn serve`); every worker (one
per leaf) sends the same timeline of bursts of `burst_bytes` over the arm's DDL transport
(`hosts.pcn bursts --transport tcp|gradlane`), announced by PCN-START a lead time ahead in the
PCN arms, each timed until every byte is acknowledged; a thread samples the leaves' uplink
queues over Thrift all along. Queue figures come from those samples at the worker's own leaf
uplink, the same way for both transports (TCP carries no telemetry).
"""
from __future__ import annotations

import json
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from experiments.queue_sampler import QueueRef, QueueSampler
from topo import agents
from topo.processes import ManagedProcess

PCN_MODULE = "hosts.pcn"
SINK_REPORT_S = 0.25
DDL_TCP_PORT = 5002
TRANSPORTS = ("tcp", "gradlane")


class AgentFailed(Exception):
    """A host agent of the repetition ended with an error."""


@dataclass(frozen=True)
class PcnSettings:
    """The knobs of one repetition (experiments/configs/pcn.yaml, `params:`)."""

    bursts: int = 6
    period_s: float = 7.5
    burst_bytes: int = 368_000
    transport: str = "tcp"
    tcp_cc: str = "cubic"
    window: int = 10
    gradlane_cc: str = "ecn"
    cc_delay_ms: float = 40.0
    lead_ms: float = 1000.0
    pcn_threshold: int = 10
    warmup_s: float = 6.0
    sample_ms: float = 20.0
    flows_per_host: int = 1
    cc: str = "reno"
    burst_timeout_s: float = 30.0


def bottleneck_queues(topo: Any) -> list[QueueRef]:
    """The rate-limited egress queues (each leaf's uplink), queue 0 (background TCP and, by the
    experiment's policy, the DDL job)."""
    out = []
    for link in topo.links:
        if link.a_queue_rate_pps and link.a_port is not None:
            out.append(QueueRef(f"{link.a}->{link.b}", topo.switches[link.a].thrift_port, link.a_port))
    return out


def _json_lines(path: Path) -> list[dict[str, Any]]:
    out = []
    if path.exists():
        for line in path.read_text().splitlines():
            if line.startswith("{"):
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
    return out


def _agent(session: Any, host: str, name: str, argv: list[str], log: Path) -> ManagedProcess:
    proc = ManagedProcess(name, "agent", argv, log, session.record, session.net.get(host))
    return proc.start()


def run_repetition(session: Any, settings: PcnSettings, pcn: bool, work_dir: Path, tag: str,
                   round_base: int = 1) -> tuple[list[dict[str, Any]], dict[str, Any], dict[str, Any]]:
    """Run one repetition; returns (per-burst records, run metrics, raw series for the plots)."""
    topo = session.topo
    work_dir.mkdir(parents=True, exist_ok=True)
    ps, sink = "ps", "bs"
    workers = topo.hosts_with_role("worker")
    senders = [h for h in topo.hosts_with_role("background") if h != sink]
    procs: list[ManagedProcess] = []
    sampler = QueueSampler(bottleneck_queues(topo), settings.sample_ms / 1000.0)
    py = [sys.executable, "-u", "-m"]
    try:
        sink_log = work_dir / f"{tag}.sink.log"
        sink_proc = _agent(session, sink, f"sink@{sink}", [
            *agents.background_sink_argv(), "--report-s", f"{SINK_REPORT_S:g}"], sink_log)
        procs.append(sink_proc)
        node = session.net.get(sink)
        sink_proc.wait_for(lambda: f":{agents.BACKGROUND_PORT} " in node.cmd("ss -ltnH"), 15,
                           "background sink listening")
        ps_log = work_dir / f"{tag}.ps.log"
        serve = [*py, PCN_MODULE, "serve", "--die-with-parent"]
        if settings.transport == "tcp":
            serve += ["--tcp-port", str(DDL_TCP_PORT)]
        else:
            serve += ["--record-bursts", "--gradlane-bytes", str(settings.burst_bytes),
                      "--ranks", str(len(workers))]
        ps_proc = _agent(session, ps, f"pcn-serve@{ps}", serve, ps_log)
        procs.append(ps_proc)
        ps_proc.wait_for_line(r'"listening"', 20, "PCN server listening")

        lead = settings.lead_ms / 1000.0
        duration = settings.warmup_s + lead + 1.0 + settings.bursts * settings.period_s + 5.0
        for host in senders:
            procs.append(_agent(session, host, f"flows@{host}", agents.background_flows_argv(
                topo.hosts[sink].ip, settings.flows_per_host, duration, settings.cc),
                work_dir / f"{tag}.flows.{host}.log"))
        sampler.start()
        time.sleep(settings.warmup_s)
        start_at = time.time() + lead + 1.0
        burst_procs = []
        for rank, host in enumerate(workers):
            argv = [*py, PCN_MODULE, "bursts", "--ps", topo.hosts[ps].ip, "--rank", str(rank),
                    "--transport", settings.transport, "--bytes", str(settings.burst_bytes),
                    "--bursts", str(settings.bursts), "--period-s", f"{settings.period_s:g}",
                    "--lead-ms", f"{settings.lead_ms:g}", "--start-at", f"{start_at:.6f}",
                    "--first-round", str(round_base), "--threshold", str(settings.pcn_threshold),
                    "--burst-timeout-s", f"{settings.burst_timeout_s:g}",
                    "--tcp-port", str(DDL_TCP_PORT), "--tcp-cc", settings.tcp_cc,
                    "--window", str(settings.window), "--cc", settings.gradlane_cc,
                    "--cc-delay-ms", f"{settings.cc_delay_ms:g}", "--die-with-parent"]
            if pcn:
                argv.append("--pcn")
            proc = _agent(session, host, f"bursts@{host}", argv, work_dir / f"{tag}.bursts.{host}.log")
            procs.append(proc)
            burst_procs.append(proc)
        for proc in burst_procs:
            code = proc.wait_exit(settings.bursts * (settings.period_s + settings.burst_timeout_s) + lead + 30)
            if code != 0:
                raise AgentFailed(f"{proc.name} ended with {code}: {proc.output().strip().splitlines()[-1:]}")
        time.sleep(1.5)   # the PS logs a gradient burst once it was idle for a second
        end_t = time.time()
    finally:
        sampler.stop()
        for proc in reversed(procs):
            proc.stop()
    sent = [r for p in burst_procs for r in _json_lines(p.log) if r.get("event") == "burst_sent"]
    received = [r for r in _json_lines(ps_log) if r.get("event") == "burst_received"]
    sink_rows = [r for r in _json_lines(sink_log) if r.get("event") == "received"]
    uplinks = worker_uplinks(topo, sampler.queues)
    rate = next((link.a_queue_rate_pps for link in topo.links if link.a_queue_rate_pps), None)
    return analyse(settings, pcn, sent, received, sink_rows, sampler, uplinks, start_at, end_t, rate)


def worker_uplinks(topo: Any, queues: list[Any]) -> dict[int, str]:
    """Per worker rank (the order of `hosts_with_role('worker')`), the label of its leaf's
    sampled uplink queue."""
    out = {}
    for rank, host in enumerate(topo.hosts_with_role("worker")):
        switch = topo.hosts[host].switch
        out[rank] = next(q.label for q in queues if q.label.startswith(f"{switch}->"))
    return out


def _bytes_at(rows: list[dict[str, Any]], when: float) -> float:
    """Sink bytes (all peers) at `when`, interpolated between progress reports."""
    points = [(r["t"], sum(r["bytes_by_peer"].values())) for r in rows]
    if not points:
        return 0.0
    before = [p for p in points if p[0] <= when]
    after = [p for p in points if p[0] >= when]
    if not before:
        return float(points[0][1])
    if not after:
        return float(points[-1][1])
    (t0, b0), (t1, b1) = before[-1], after[0]
    return b0 if t1 == t0 else b0 + (b1 - b0) * (when - t0) / (t1 - t0)


def analyse(settings: PcnSettings, pcn: bool, sent: list[dict[str, Any]],
            received: list[dict[str, Any]], sink_rows: list[dict[str, Any]], sampler: Any,
            uplinks: dict[int, str], start_at: float, end_t: float,
            uplink_pps: float | None = None) -> tuple[list[dict[str, Any]], dict[str, Any], dict[str, Any]]:
    """Per-burst records, run metrics and plot series from what the agents logged (`sent`:
    the workers' burst_sent rows; `received`: the PS's per-burst telemetry of gradient DATA,
    empty for TCP) and the queue samples. A burst's start queue is the last sample of its
    worker's uplink at or before its first byte went out; its max queue the largest sample
    until every byte was acknowledged; its queueing delay the mean sampled queue then over the
    uplink rate (`uplink_pps`)."""
    tele = {(r["rank"], r["round"]): r for r in received}
    lead = settings.lead_ms / 1000.0
    rounds = sorted({s["round"] for s in sent})
    records = []
    labels = [q.label for q in sampler.queues]
    for round_ in rounds:
        per_worker = []
        for s in [x for x in sent if x["round"] == round_]:
            label = uplinks[s["rank"]]
            during = [d for _, d in sampler.series(label, s["first_t"], s["done_t"])]
            start_q = _last_before(sampler.series(label, s["first_t"] - 1.0, s["first_t"]))
            mean_q = _mean(during)
            got = tele.get((s["rank"], round_))
            per_worker.append({
                "rank": s["rank"], "completion_s": s["completion_s"],
                "throughput_mbps": s["bytes"] * 8 / s["completion_s"] / 1e6,
                "start_qdepth": start_q, "max_qdepth": max(during, default=start_q),
                "mean_qdepth": mean_q,
                "qdelay_ms": mean_q / uplink_pps * 1000.0 if mean_q is not None and uplink_pps else None,
                "late_s": s.get("late_s"), "retransmissions": s.get("retransmissions"),
                "mark_cuts": s.get("cc_mark_cuts"), "loss_cuts": s.get("cc_loss_cuts"),
                "tele_start_qdepth": got["start_qdepth"] if got else None,
                "tele_max_qdepth": got["max_qdepth"] if got else None,
                "acked": s.get("acked"), "pcn_rtt_ms": s.get("pcn_rtt_ms")})
        ready = min(x["ready_t"] for x in sent if x["round"] == round_)
        records.append({
            "round": round_, "pcn": pcn, "t_s": round(ready - start_at, 3),
            "round_time_s": max(w["completion_s"] for w in per_worker),
            "delivered_fraction": {"0": 1.0},
            "violations": 0,
            "queue_depth": max((w["max_qdepth"] for w in per_worker if w["max_qdepth"] is not None),
                               default=None),
            "start_qdepth": _mean([w["start_qdepth"] for w in per_worker]),
            "workers": per_worker})
    workers = [w for r in records for w in r["workers"]]
    t_from, t_to = start_at - lead, end_t
    bg_bytes = _bytes_at(sink_rows, t_to) - _bytes_at(sink_rows, t_from)
    metrics = {
        "start_queue_pkts": _mean([w["start_qdepth"] for w in workers]),
        "max_queue_in_burst_pkts": _mean([w["max_qdepth"] for w in workers]),
        "burst_completion_s": _mean([w["completion_s"] for w in workers]),
        "ddl_throughput_mbps": _mean([w["throughput_mbps"] for w in workers]),
        "queueing_delay_ms": _mean([w["qdelay_ms"] for w in workers]),
        "background_throughput_mbps": bg_bytes * 8 / (t_to - t_from) / 1e6 if t_to > t_from else None,
        "tele_start_queue_pkts": _mean([w["tele_start_qdepth"] for w in workers]),
        "ddl_retransmissions": _mean([w["retransmissions"] for w in workers]),
        "ddl_mark_cuts": _mean([w["mark_cuts"] for w in workers]),     # gradlane's window only
        "ddl_loss_cuts": _mean([w["loss_cuts"] for w in workers]),
        "late_bursts": sum(1 for w in workers if (w["late_s"] or 0) > 0.01),
        "pcn_acked": sum(1 for w in workers if w.get("acked")),
        "bursts_recorded": len(workers),
        "queue_samples": len(sampler.samples), "queue_sample_errors": sampler.errors,
    }
    series = {"t0": start_at, "queues": {lab: [(round(t - start_at, 7), d) for t, d in sampler.series(lab)]
                                         for lab in labels},
              "ready_s": [round(min(x["ready_t"] for x in sent if x["round"] == r) - start_at, 7) for r in rounds]}
    return records, metrics, series


def _last_before(series: list[tuple[float, int]]) -> int | None:
    return series[-1][1] if series else None


def _mean(values: list[Any]) -> float | None:
    vals = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    return statistics.fmean(vals) if vals else None
