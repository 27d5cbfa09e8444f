"""Experiment 1, LTP incast: 8 workers push MTU-sized gradient packets through one bottleneck
(a few thousand packets/s, queue 64) to the parameter server. TCP with every available
congestion control (ECN on and off) vs software MLT vs gradlane (LTP: loss-tolerant push with
early close, reliable pull). Figures: rounds/s, p50/p99 round time, time to target accuracy,
final accuracy, and the trend over 2, 4, 8 workers.
"""
from __future__ import annotations

import math
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

from experiments import plots
from experiments.api import ArmContext, ArmResult, Figure, Row, Summary, Table
from experiments.backends.ns3.simulation import Simulation
from experiments.config import ExperimentConfig
from experiments.records import Results
from experiments.stats import Stat, fmt_num, percentile
from experiments.stats import summarize as stat_of
from experiments.training import ROUND_TIME_MEANING, run_training, time_to_accuracy

ORDER = 1
# Where gradlane's push time goes at 8 workers (measured 2026-11-26, docs/mechanisms.md,
# "Where the push time goes"): the summary says it beside the figures.
PUSH_TIME_NOTE = (
    "Where gradlane's push time goes at 8 workers (instrumented --quick runs, docs/mechanisms.md): "
    "each worker's sender is window-bound (window full ~98% of its push) behind a standing "
    "bottleneck queue (RTT ~17 ms, ~15 ms of it the queueing the ACKs echo), not CPU- or "
    "pacing-bound (the Python sender does ~13,000 chunks/s alone on loopback, 8 of them ~8,400/s "
    "into one receiver: benchmarks/transport.py). At the PS the push's DATA span ~165 ms for a "
    "~120 ms wire floor: the workers start pushing as their reliable pulls end, their first "
    "packets ~45 ms apart, and the bottleneck idles ~30 ms, mostly in the push's first half. "
    "The 2-core machine is saturated in every 8-worker arm, TCP's included (~180-197% busy of "
    "200%, the workers ~1 core in both), so CPU is shared by all arms, not gradlane's alone.")
TITLE = "LTP incast: training throughput and round time vs TCP and MLT"
PAPER = "LTP, IWQoS '23: 8 workers + 1 PS"

FIGURES = [
    Figure("throughput_x", "training throughput (rounds/s), gradlane / best TCP", "up to 30x", "x"),
    Figure("p99_round_x", "p99 round time, best TCP / gradlane", "n/a (paper reports throughput)", "x",
           "our bar: >= 10x"),
    Figure("p50_round_x", "p50 round time, best TCP / gradlane", "n/a", "x"),
    Figure("tta_vs_tcp", "time to target accuracy, gradlane vs best TCP", "faster (30x throughput, same accuracy)",
           "%", "our bar: >= 40% lower"),
    Figure("tta_vs_mlt", "time to target accuracy, gradlane vs MLT", "n/a (MLT is not in the paper)", "%",
           "our bar: >= 25% lower"),
    Figure("accuracy_delta", "final accuracy, gradlane - best TCP", "no accuracy loss", "points",
           "our bar: within 0.5 point"),
    Figure("worker_trend", "throughput gain over TCP at 2 / 4 / 8 workers", "n/a (8 workers only)", "x",
           "sweep with fewer arms"),
]


# -- setup ------------------------------------------------------------------------------------
def available_congestion_controls() -> list[str]:
    """The kernel's net.ipv4.tcp_available_congestion_control."""
    try:
        return Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()
    except OSError:
        return []


def _try_modprobe(cc: str) -> bool:
    """Load tcp_<cc> if this kernel has modprobe and the module; True if it is available then."""
    if cc in available_congestion_controls():
        return True
    if shutil.which("modprobe") and Path("/lib/modules").is_dir():
        subprocess.run(["modprobe", "-q", f"tcp_{cc}"], capture_output=True, timeout=20)
    return cc in available_congestion_controls()


def setup(config: ExperimentConfig) -> ExperimentConfig:
    """Drop TCP arms whose congestion control this kernel cannot load (after trying modprobe),
    recording them in params.skipped_arms."""
    keep, skipped = [], []
    for arm in config.arms:
        if arm.transport == "tcp" and arm.tcp_cc and not _try_modprobe(arm.tcp_cc):
            skipped.append(f"{arm.name} (tcp_{arm.tcp_cc} not available in this kernel)")
        else:
            keep.append(arm)
    params = {**config.params, "skipped_arms": skipped,
              "available_cc": available_congestion_controls()}
    return replace(config, arms=tuple(keep), params=params)


# -- one run ----------------------------------------------------------------------------------
def run_arm(ctx: ArmContext) -> ArmResult:
    """One training job of the arm; adds time to target accuracy."""
    outcome = run_training(ctx)
    metrics = dict(outcome.metrics)
    target = float(ctx.param("target_accuracy", 0.85))
    metrics["target_accuracy"] = target
    metrics["time_to_target_s"] = time_to_accuracy(metrics["accuracy_curve"], target)
    return ArmResult(rounds=outcome.rounds, metrics=metrics, ok=outcome.ok, error=outcome.error())


# -- summary ----------------------------------------------------------------------------------
def _is_sweep(config: ExperimentConfig, arm: str) -> bool:
    try:
        return bool(config.arm(arm).params.get("sweep"))
    except Exception:
        return False


def _main_arms(results: Results, config: ExperimentConfig) -> list[str]:
    return [a for a in results.arms() if not _is_sweep(config, a)]


def _transport(config: ExperimentConfig, arm: str) -> str:
    try:
        return config.arm(arm).transport
    except Exception:
        return "?"


def _pooled_round_times(results: Results, arm: str) -> list[float]:
    ok = {r["rep"] for r in results.runs_of(arm)}
    return [r["round_time_s"] for r in results.rounds_of(arm) if r["rep"] in ok and r.get("round_time_s") is not None]


def _best(results: Results, arms: list[str], key: str, lower: bool) -> str | None:
    scored = [(stat_of(results.metric(a, key)).mean, a) for a in arms]
    scored = [(v, a) for v, a in scored if math.isfinite(v)]
    if not scored:
        return None
    return (min if lower else max)(scored)[1]


def _per_rep_ratio(results: Results, num_arm: str, den_arm: str, key: str) -> Stat:
    """Stat over repetitions of metric(num)/metric(den), paired by repetition."""
    num = {r["rep"]: r["metrics"].get(key) for r in results.runs_of(num_arm)}
    den = {r["rep"]: r["metrics"].get(key) for r in results.runs_of(den_arm)}
    return stat_of(num[k] / den[k] for k in num if k in den and num[k] and den[k])


def _tta_change(results: Results, ours: str, base: str) -> tuple[Stat, str]:
    """(percent change of gradlane's time to target vs the baseline, per repetition; note)."""
    a = {r["rep"]: r["metrics"].get("time_to_target_s") for r in results.runs_of(ours)}
    b = {r["rep"]: r["metrics"].get("time_to_target_s") for r in results.runs_of(base)}
    pairs = [(a[k], b[k]) for k in a if k in b]
    changes = [100.0 * (x - y) / y for x, y in pairs if x is not None and y]
    missed = [k for k, (x, y) in zip(a, pairs) if x is None or y is None]
    note = f"{base} never reached the target in {sum(1 for _, y in pairs if y is None)} run(s)" \
        if any(y is None for _, y in pairs) else ""
    if missed and not changes:
        note = note or "target not reached"
    return stat_of(changes), note


def _scale_note(config: ExperimentConfig) -> str:
    """What the run's scale does to TCP's timeouts, for the throughput row: only a bottleneck
    scaled down to packets per second (the emulation's) makes the 200 ms RTO_min cheap."""
    pps = config.topology.bottleneck_pps
    if not pps:
        return ""
    queue_ms = 1000.0 * config.topology.queue_depth / pps
    return (f"bottleneck scaled to {fmt_num(pps)} packets/s: a full {config.topology.queue_depth}-packet "
            f"queue is ~{queue_ms:.0f} ms of delay, so TCP's 200 ms minimum RTO costs ~{200 / queue_ms:.0f} "
            f"such delays here vs thousands at the paper's microsecond RTTs; incast timeouts hurt TCP "
            f"far less at this scale")


def summarize(results: Results, config: ExperimentConfig) -> Summary:
    """The headline rows (FIGURES), a per-arm table and notes."""
    main = _main_arms(results, config)
    ours = next((a for a in main if _transport(config, a) == "ltp"), None)
    mlt = next((a for a in main if _transport(config, a) == "mlt"), None)
    tcps = [a for a in main if _transport(config, a) == "tcp"]
    best_tput = _best(results, tcps, "rounds_per_s", lower=False)
    best_p99 = _best(results, tcps, "round_time_p99_s", lower=True)
    best_p50 = _best(results, tcps, "round_time_p50_s", lower=True)
    best_tta = _best(results, tcps, "time_to_target_s", lower=True) or best_tput
    best_acc = _best(results, tcps, "final_accuracy", lower=False)
    flag = results.switch_dropped()
    target = config.params.get("target_accuracy", 0.85)
    rows: list[Row] = []

    def ratio_row(key: str, num: str | None, den: str | None, metric: str, note: str) -> None:
        if num and den:
            rows.append(Row(key, _per_rep_ratio(results, num, den, metric), note, flag))
        else:
            rows.append(Row(key, "n/a", "an arm has no finished run", flag))

    ratio_row("throughput_x", ours, best_tput, "rounds_per_s",
              "; ".join(n for n in (f"best TCP: {best_tput}", _scale_note(config)) if n))
    ratio_row("p99_round_x", best_p99, ours, "round_time_p99_s", f"best TCP: {best_p99}")
    ratio_row("p50_round_x", best_p50, ours, "round_time_p50_s", f"best TCP: {best_p50}")
    for key, base, label in (("tta_vs_tcp", best_tta, "best TCP"), ("tta_vs_mlt", mlt, "MLT")):
        if ours and base:
            stat, note = _tta_change(results, ours, base)
            rows.append(Row(key, stat, "; ".join(x for x in (f"{label}: {base}, target accuracy {target:g}",
                                                             "negative = faster", note) if x), flag))
        else:
            rows.append(Row(key, "n/a", "an arm has no finished run", flag))
    if ours and best_acc:
        a = {r["rep"]: r["metrics"].get("final_accuracy") for r in results.runs_of(ours)}
        b = {r["rep"]: r["metrics"].get("final_accuracy") for r in results.runs_of(best_acc)}
        rows.append(Row("accuracy_delta", stat_of(100.0 * (a[k] - b[k]) for k in a if k in b and a[k] is not None
                                                     and b[k] is not None),
                        f"best TCP by accuracy: {best_acc}; same rounds, same seeds", flag))
    else:
        rows.append(Row("accuracy_delta", "n/a", "an arm has no finished run", flag))
    trend = _trend(results, config)
    parts = []
    for n in sorted(trend):
        gain = trend[n].get("gain")
        parts.append(f"{n}w: {fmt_num(gain, 3)}x" if gain is not None else f"{n}w: n/a")
    compared = next(iter(trend.values()), {}).get("tcp_families") or []
    rows.append(Row("worker_trend", " / ".join(parts) or "n/a",
                    "gradlane rounds/s over the best of the same TCP variants at every worker count ("
                    + (", ".join(f"{cc}{' ECN' if ecn == 'on' else ''}" for cc, ecn in compared) or "none")
                    + ")", flag))

    table_rows = []
    for arm in results.arms():
        runs_all = [r for r in results.runs if r["arm"] == arm]
        times = _pooled_round_times(results, arm)
        table_rows.append([
            arm, str(config.workers_of(config.arm(arm))) if arm in {a.name for a in config.arms} else "?",
            f"{len(results.runs_of(arm))}/{len(runs_all)}",
            stat_of(results.metric(arm, "rounds_per_s")).fmt(3),
            fmt_num(percentile(times, 50), 3), fmt_num(percentile(times, 99), 3),
            stat_of(results.metric(arm, "time_to_target_s")).fmt(3)
            + _missed(results, arm),
            stat_of(results.metric(arm, "final_accuracy")).fmt(3),
            fmt_num(stat_of(_tail_drops(r) for r in results.runs_of(arm)).mean, 4),
            _resent_share(results.rounds_of(arm)),
            fmt_num(stat_of(results.metric(arm, "violations")).mean, 3),
        ])
    notes = [f"'best TCP' is chosen per figure among {', '.join(tcps) or 'no TCP arm'} (best mean).",
             ROUND_TIME_MEANING + " Rounds/s = rounds / time from the first round's start to the "
             "last round's end.",
             f"Time to target = training time until the held-out accuracy (evaluated every epoch) "
             f"first reaches {target:g}."]
    if config.params.get("backend") != "ns3":
        notes.append(PUSH_TIME_NOTE)       # measured in emulation
    skipped = config.params.get("skipped_arms") or []
    if skipped:
        notes.append("Arms skipped on this machine: " + "; ".join(skipped) + ".")
    return Summary(rows=rows, tables=[Table(
        "Per arm (p50/p99 pooled over repetitions' rounds)",
        ["arm", "workers", "runs ok", "rounds/s", "p50 round s", "p99 round s", "time to target s",
         "final accuracy", "queue tail drops/run", "DATA resent/round", "bound violations/run"],
        table_rows)], notes=notes + [RESENT_NOTE])


RESENT_NOTE = ("DATA resent/round: the share of a round's DATA packets (push and pull, every "
               "sender) that were resends, mean and largest over the rounds; where the round "
               "records count both (the lossy arms on ns-3), else n/a. Without random loss a "
               "round should resend under 1 %.")


def _resent_share(rounds: list[dict[str, Any]]) -> str:
    """Mean (max) share of resent DATA packets per round, or n/a where not recorded."""
    shares = [r["retransmissions"] / r["data_packets"] for r in rounds
              if isinstance(r.get("retransmissions"), (int, float)) and r.get("data_packets")]
    if not shares:
        return "n/a"
    return f"{100 * sum(shares) / len(shares):.2g} % (max {100 * max(shares):.2g} %)"


def _missed(results: Results, arm: str) -> str:
    miss = sum(1 for r in results.runs_of(arm) if r["metrics"].get("time_to_target_s") is None)
    return f", missed in {miss}" if miss else ""


def _tail_drops(run: dict[str, Any]) -> float | None:
    tail = run.get("switch", {}).get("queue_tail_drops") or {}
    known = [v for v in tail.values() if v is not None]
    return float(sum(known)) if known else None


def _tcp_family(config: ExperimentConfig, arm: str) -> tuple[str | None, str | None]:
    spec = config.arm(arm)
    return spec.tcp_cc, spec.tcp_ecn


def _trend(results: Results, config: ExperimentConfig) -> dict[int, dict[str, Any]]:
    """worker count -> {transport: (mean rounds/s, arm) of its best arm, 'gain': ltp / best tcp,
    'tcp_families': the TCP variants compared}. TCP's best is taken among the same variants
    (congestion control and ECN) at every worker count: those that ran at all of them."""
    values: dict[int, list[tuple[str, str, float]]] = {}
    for arm in results.arms():
        try:
            spec = config.arm(arm)
        except Exception:
            continue
        value = stat_of(results.metric(arm, "rounds_per_s")).mean
        if math.isfinite(value):
            values.setdefault(config.workers_of(spec), []).append((spec.transport, arm, value))
    families = [{_tcp_family(config, a) for t, a, _ in entries if t == "tcp"} for entries in values.values()]
    common = set.intersection(*families) if families else set()
    out: dict[int, dict[str, Any]] = {}
    for n, entries in values.items():
        slot: dict[str, Any] = {"tcp_families": sorted(common, key=str)}
        for transport, arm, value in entries:
            if transport == "tcp" and _tcp_family(config, arm) not in common:
                continue
            if value > slot.get(transport, (-1.0, ""))[0]:
                slot[transport] = (value, arm)
        ltp, tcp = slot.get("ltp"), slot.get("tcp")
        slot["gain"] = ltp[0] / tcp[0] if ltp and tcp and tcp[0] > 0 else None
        out[n] = slot
    return out


# -- plots ------------------------------------------------------------------------------------
def plot(results: Results, config: ExperimentConfig, out_dir: Path) -> list[Path]:
    """Rounds/s and p99 bars, round-time CDF, accuracy over time, the worker trend."""
    main = _main_arms(results, config)
    flagged = [a for a in main if results.switch_dropped(a)]
    out = [
        plots.bars({a: results.metric(a, "rounds_per_s") for a in main}, out_dir / "rounds_per_s.png",
                   "rounds/s", "Training throughput (8 workers, incast)", flagged=flagged),
        plots.bars({a: results.metric(a, "round_time_p99_s") for a in main}, out_dir / "p99_round_time.png",
                   "p99 round time (s)", "p99 round time per run", log_y=True, flagged=flagged),
        plots.bars({a: results.metric(a, "time_to_target_s") for a in main}, out_dir / "time_to_target.png",
                   "seconds", f"Time to {config.params.get('target_accuracy', 0.85):g} test accuracy",
                   flagged=flagged),
        plots.round_time_cdf(results, out_dir / "round_time_cdf.png", main),
        plots.time_to_accuracy(results, out_dir / "accuracy_over_time.png", main,
                               target=config.params.get("target_accuracy")),
    ]
    trend = _trend(results, config)
    series: dict[str, tuple[list[float], list[float], list[float]]] = {}
    for transport in ("tcp", "mlt", "ltp"):
        xs, ys, sds = [], [], []
        for n in sorted(trend):
            if transport in trend[n]:
                value, arm = trend[n][transport]
                xs.append(n)
                ys.append(value)
                sds.append(stat_of(results.metric(arm, "rounds_per_s")).sd)
        if xs:
            series[{"ltp": "gradlane", "mlt": "MLT", "tcp": "best TCP"}[transport]] = (xs, ys, sds)
    out.append(plots.lines(series, out_dir / "worker_trend.png", "workers", "rounds/s",
                           "Throughput vs number of workers", log_y=True))
    return out


def simulated() -> Simulation:
    """How an arm runs in ns-3 (`--backend ns3`): experiments/backends/ns3/ltp_incast.py."""
    from experiments.backends.ns3 import ltp_incast as ns3  # noqa: PLC0415 (ns-3's modules only when asked for)
    return ns3.SIMULATION
