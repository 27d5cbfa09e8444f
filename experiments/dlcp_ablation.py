"""Experiment 2, DLCP ablation: data-parallel training on a leaf-spine fabric loaded with
background TCP flows. TCP and software MLT (the baselines) vs gradlane with all switch
mechanisms, and gradlane with one mechanism removed at a time (priority, selective drop,
per-packet spraying). Figures: time to target accuracy per arm, speed-up over the best baseline
per mechanism, round-time CDFs.

Each ltp arm installs a policy for its own job id (the rules of the topology's policy file with
the arm's ablation switches) and records, per run, the switch counters that show each mechanism
really on or off: which queues the job's packets used on the bottleneck ports, how its push
packets split over the equal-cost paths, and how many it had dropped selectively.
"""
from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any


from experiments import plots
from experiments.api import ArmContext, ArmResult, Figure, Row, Summary, Table
from experiments.backends.ns3.simulation import Simulation
from experiments.conditions import flatten_counters
from experiments.config import Arm, ExperimentConfig
from experiments.records import Results
from experiments.stats import fmt_num, percentile
from experiments.stats import summarize as stat_of
from experiments.errors import ExperimentError
from experiments.training import apply_job_policy, run_training, standard_metrics, time_to_accuracy

ORDER = 2
TITLE = "DLCP ablation: time to target accuracy on a loaded leaf-spine, one mechanism removed at a time"
PAPER = "DLCP (arXiv 2008.08445) / MLT (NSDI '24)"

# The per-job ablation switches of the controller's policy (docs/mechanisms.md), and what
# removing each one is called in the tables.
FEATURES = ("prioritize", "selective_drop", "spray")
FEATURE_LABEL = {"prioritize": "priority", "selective_drop": "selective drop", "spray": "spraying"}
CONTROL_QUEUE = 7       # gradient control kinds (ACK, PROBE, ...) always ride queue 7
DEFAULT_TARGET = 0.86

FIGURES = [
    Figure("speedup_vs_best", "training speed-up of gradlane over the best baseline (time to target accuracy)",
           "up to +84.3%", "%",
           "leaf-spine scaled to a few hundred packets/s per uplink on a 2-core machine; host CPU time is a "
           "large share of a round, which dilutes every network effect"),
    Figure("loss_without_priority", "time to target without priority vs gradlane", "n/a (only the total is given)",
           "%", "positive = slower without the mechanism"),
    Figure("loss_without_selective_drop", "time to target without selective drop vs gradlane",
           "n/a (only the total is given)", "%", "positive = slower without the mechanism"),
    Figure("loss_without_spray", "time to target without spraying vs gradlane", "n/a (only the total is given)",
           "%", "positive = slower without the mechanism"),
    Figure("accuracy_delta", "final accuracy, gradlane - best baseline", "no extra epochs within the bound",
           "points", "same rounds and seeds for every arm"),
]

# -- arms -------------------------------------------------------------------------------------
def features_of(arm: Arm) -> dict[str, bool]:
    """The arm's ablation switches (params `prioritize`, `selective_drop`, `spray`; default on)."""
    return {f: bool(arm.params.get(f, True)) for f in FEATURES}


def is_baseline(arm: Arm) -> bool:
    """TCP and MLT arms are the baselines; ltp arms are gradlane (full or ablated)."""
    return arm.transport != "ltp"


def removed(arm: Arm) -> list[str]:
    """The mechanisms an ltp arm turns off."""
    return [f for f, on in features_of(arm).items() if not on] if not is_baseline(arm) else []


def install_policy(ctx: ArmContext, job_id: int) -> dict[str, Any]:
    """Install the arm's policy for `job_id` and read it back; returns the features the
    controller reports for the job. RuntimeError with one line when that fails."""
    session = ctx.session
    features = features_of(ctx.arm)
    apply_job_policy(ctx, job_id, **features)
    installed: dict[str, Any] = {}
    for job in session.policy_jobs():
        if job.get("job") == job_id:
            installed = {f: job.get(f) for f in FEATURES}
    if installed and any(installed.get(f) is not None and bool(installed[f]) != on for f, on in features.items()):
        raise RuntimeError(f"controller reports job {job_id} features {installed}, wanted {features}")
    return installed or {f: None for f in FEATURES}


# -- counters: the evidence -------------------------------------------------------------------
def bottleneck_ports(topo: Any) -> list[tuple[str, int, str]]:
    """(switch, port, peer switch) of every rate-limited switch port: the equal-cost uplinks."""
    out = []
    for link in topo.links:
        for sw, port, rate, peer in ((link.a, link.a_port, link.a_queue_rate_pps, link.b),
                                     (link.b, link.b_port, link.b_queue_rate_pps, link.a)):
            if rate and sw in topo.switches and port is not None:
                out.append((sw, int(port), peer))
    return sorted(out)


def _counters(session: Any) -> dict[str, float]:
    stats = session.stats()
    return flatten_counters(stats) if stats is not None else {}


def _delta(after: dict[str, float], before: dict[str, float]) -> dict[str, float]:
    return {k: v - before.get(k, 0.0) for k, v in after.items() if v - before.get(k, 0.0)}


def queue_tx(delta: dict[str, float], switch: str, port: int) -> dict[int, float]:
    """Packets sent per priority queue of one port in a counter delta."""
    out: dict[int, float] = {}
    prefix = f"{switch}.queues[port={port},prio="
    for key, value in delta.items():
        if key.startswith(prefix) and key.endswith("].tx"):
            out[int(key[len(prefix):-len("].tx")])] = value
    return out


def job_class_sum(delta: dict[str, float], job_id: int, field: str, switch: str | None = None) -> float:
    """Sum of a class counter (e.g. 'push.seen', 'dropped') over the job's classes."""
    total = 0.0
    for key, value in delta.items():
        sw, _, rest = key.partition(".classes[")
        if not rest or (switch is not None and sw != switch):
            continue
        label, _, leaf = rest.partition("].")
        if f"job={job_id}," in f"{label}," and leaf == field:
            total += value
    return total


def evidence(delta: dict[str, float], ports: list[tuple[str, int, str]], job_id: int,
             seconds: float) -> dict[str, Any]:
    """What the counters say about the job's run: per bottleneck port, packets by queue; the
    job's push packets per equal-cost path (counted at the switch behind each uplink); its
    selective drops; the share of its data that rode a gradient priority queue (1..6)."""
    by_port = {f"{sw}:{port}": queue_tx(delta, sw, port) for sw, port, _ in ports}
    paths = {peer: job_class_sum(delta, job_id, "push.seen", peer) for _, _, peer in ports}
    path_total = sum(paths.values())
    prio_pkts = sum(n for q in by_port.values() for prio, n in q.items() if 0 < prio < CONTROL_QUEUE)
    default_pkts = sum(q.get(0, 0.0) for q in by_port.values())
    return {
        "bottleneck_tx_by_queue": by_port,
        "push_per_path": paths,
        "busier_path_share": max(paths.values()) / path_total if path_total else None,
        "priority_queue_pkts": prio_pkts,
        "default_queue_pps": default_pkts / seconds if seconds > 0 else None,
        "job_push_seen": job_class_sum(delta, job_id, "push.seen"),
        "selective_drops": job_class_sum(delta, job_id, "dropped"),
    }


def background_load(session: Any, ports: list[tuple[str, int, str]], seconds: float) -> dict[str, Any]:
    """Queue-0 packets/s on each bottleneck port while no job runs: the background flows' load."""
    before = _counters(session)
    t0 = time.monotonic()
    time.sleep(seconds)
    delta = _delta(_counters(session), before)
    dt = time.monotonic() - t0
    pps = {f"{sw}:{port}": round(queue_tx(delta, sw, port).get(0, 0.0) / dt, 1) for sw, port, _ in ports}
    return {"background_pps": pps, "background_pps_total": round(sum(pps.values()), 1)}


# -- one run ----------------------------------------------------------------------------------
def with_eval_accuracy(rounds: list[dict[str, Any]], result: Any) -> list[dict[str, Any]]:
    """The round records with the PS's `eval` accuracies (every --eval-every rounds) filled in
    where the epoch records left none."""
    evals = {r.get("round"): r.get("accuracy") for name, recs in result.records.items()
             if name.startswith("ps") for r in recs if r.get("event") == "eval"}
    return [{**r, "accuracy": r["accuracy"] if r.get("accuracy") is not None else evals.get(r["round"])}
            for r in rounds]


def run_arm(ctx: ArmContext) -> ArmResult:
    """One training job of the arm on the loaded leaf-spine, with its policy and evidence."""
    session = ctx.session
    job_id = session.jobs + 1      # run_training gives the next job this id
    ports = bottleneck_ports(session.topo)
    extra: dict[str, Any] = {"job": job_id, "features": features_of(ctx.arm), "removed": removed(ctx.arm)}
    try:
        if not is_baseline(ctx.arm):
            extra["installed_features"] = install_policy(ctx, job_id)
    except (RuntimeError, ExperimentError, ValueError, OSError) as exc:
        return ArmResult(rounds=[], metrics={}, ok=False, error=str(exc), extra=extra)
    probe_s = float(ctx.param("background_probe_s", 1.5))
    if probe_s > 0:
        extra.update(background_load(session, ports, probe_s))
    before = _counters(session)
    t0 = time.monotonic()
    every = int(ctx.param("eval_every", 1))
    outcome = run_training(ctx, extra_ps=("--eval-every", str(every)) if every > 0 else ())
    seconds = time.monotonic() - t0
    delta = _delta(_counters(session), before)
    rounds = with_eval_accuracy(outcome.rounds, outcome.result)
    metrics = standard_metrics(outcome.result, rounds, ctx.rounds)
    target = float(ctx.param("target_accuracy", DEFAULT_TARGET))
    metrics["target_accuracy"] = target
    metrics["time_to_target_s"] = time_to_accuracy(metrics["accuracy_curve"], target)
    metrics.update(evidence(delta, ports, job_id, seconds))
    if metrics.get("job_push_seen") == 0 and not is_baseline(ctx.arm):
        extra["warning"] = "the switches counted no push packet of this job (policy not applied?)"
    return ArmResult(rounds=rounds, metrics=metrics, ok=outcome.ok, error=outcome.error(), extra=extra)


# -- summary ----------------------------------------------------------------------------------
def _arm(config: ExperimentConfig, name: str) -> Arm | None:
    try:
        return config.arm(name)
    except Exception:
        return None


def roles(results: Results, config: ExperimentConfig) -> tuple[list[str], str | None, dict[str, str]]:
    """(baseline arms, the full gradlane arm, mechanism -> the arm without it)."""
    baselines, full, without = [], None, {}
    for name in results.arms():
        arm = _arm(config, name)
        if arm is None:
            continue
        if is_baseline(arm):
            baselines.append(name)
            continue
        off = removed(arm)
        if not off and full is None:
            full = name
        elif len(off) == 1 and off[0] not in without:
            without[off[0]] = name
    return baselines, full, without


def best_baseline(results: Results, baselines: list[str]) -> str | None:
    """The baseline with the lowest mean time to target (runs that missed it count as missing)."""
    scored = [(stat_of(results.metric(a, "time_to_target_s")).mean, a) for a in baselines]
    scored = [(v, a) for v, a in scored if math.isfinite(v)]
    return min(scored)[1] if scored else None


def _tta(results: Results, arm: str) -> dict[int, float | None]:
    return {r["rep"]: r["metrics"].get("time_to_target_s") for r in results.runs_of(arm)}


def speedups(results: Results, arm: str, base: str) -> list[float]:
    """Per repetition (paired): time to target of `base` / of `arm` - 1, in percent."""
    a, b = _tta(results, arm), _tta(results, base)
    return [100.0 * (b[k] / a[k] - 1.0) for k in a if k in b and a[k] and b[k]]


def slowdowns(results: Results, arm: str, full: str) -> list[float]:
    """Per repetition (paired): time to target of `arm` / of the full gradlane - 1, in percent."""
    a, f = _tta(results, arm), _tta(results, full)
    return [100.0 * (a[k] / f[k] - 1.0) for k in a if k in f and a[k] and f[k]]


def _missed(results: Results, arm: str) -> int:
    return sum(1 for r in results.runs_of(arm) if r["metrics"].get("time_to_target_s") is None)


def _mean_metric(results: Results, arm: str, key: str) -> float:
    return stat_of(results.metric(arm, key)).mean


def _tail_drops(run: dict[str, Any]) -> float | None:
    tail = (run.get("switch") or {}).get("queue_tail_drops") or {}
    known = [v for v in tail.values() if v is not None]
    return float(sum(known)) if known else None


def _bg(run: dict[str, Any]) -> float | None:
    value = run.get("background_pps_total")
    return float(value) if isinstance(value, (int, float)) else None


def describe_arm(config: ExperimentConfig, name: str) -> str:
    arm = _arm(config, name)
    if arm is None:
        return "?"
    if arm.transport == "tcp":
        return f"TCP {arm.tcp_cc or 'default'}, ECN {arm.tcp_ecn or 'as is'}"
    if arm.transport == "mlt":
        return "software MLT (PLAIN, one bound)"
    off = removed(arm)
    return "gradlane, all mechanisms" if not off else "gradlane without " + ", ".join(FEATURE_LABEL[f] for f in off)


def summarize(results: Results, config: ExperimentConfig) -> Summary:
    """Headline rows, a per-arm table with the evidence counters, notes."""
    baselines, full, without = roles(results, config)
    best = best_baseline(results, baselines)
    flag = results.switch_dropped()
    target = config.params.get("target_accuracy", DEFAULT_TARGET)
    rows: list[Row] = []
    if full and best:
        missed = _missed(results, full) + _missed(results, best)
        rows.append(Row("speedup_vs_best", stat_of(speedups(results, full, best)),
                        f"best baseline: {best}; target accuracy {target:g}"
                        + (f"; {missed} run(s) missed the target" if missed else ""), flag))
    else:
        rows.append(Row("speedup_vs_best", "n/a", "no finished run of gradlane or of any baseline reached the target",
                        flag))
    for feature in FEATURES:
        key = f"loss_without_{'priority' if feature == 'prioritize' else feature}"
        arm = without.get(feature)
        if full and arm:
            rows.append(Row(key, stat_of(slowdowns(results, arm, full)), f"arm {arm} vs {full}", flag))
        else:
            rows.append(Row(key, "n/a", "arm not run", flag))
    if full and best:
        a = {r["rep"]: r["metrics"].get("final_accuracy") for r in results.runs_of(full)}
        b = {r["rep"]: r["metrics"].get("final_accuracy") for r in results.runs_of(best)}
        rows.append(Row("accuracy_delta", stat_of(100.0 * (a[k] - b[k]) for k in a if k in b and a[k] is not None
                                                     and b[k] is not None), f"best baseline: {best}", flag))
    else:
        rows.append(Row("accuracy_delta", "n/a", "an arm has no finished run", flag))

    table = []
    for name in results.arms():
        runs = results.runs_of(name)
        times = [r["round_time_s"] for r in results.rounds_of(name)
                 if r["rep"] in {x["rep"] for x in runs} and r.get("round_time_s") is not None]
        miss = _missed(results, name)
        share = _mean_metric(results, name, "busier_path_share")
        table.append([
            name, describe_arm(config, name),
            f"{len(runs)}/{len([r for r in results.runs if r['arm'] == name])}",
            stat_of(results.metric(name, "time_to_target_s")).fmt(3) + (f", missed in {miss}" if miss else ""),
            stat_of(speedups(results, name, best)).fmt(3) if best and name != best else "—",
            fmt_num(percentile(times, 50), 3), fmt_num(percentile(times, 99), 3),
            stat_of(results.metric(name, "final_accuracy")).fmt(3),
            fmt_num(_mean_metric(results, name, "selective_drops"), 4),
            fmt_num(stat_of(_tail_drops(r) for r in runs).mean, 4),
            fmt_num(share, 3),
            fmt_num(_mean_metric(results, name, "priority_queue_pkts"), 4),
            fmt_num(stat_of(_bg(r) for r in runs).mean, 4),
        ])
    topo = config.topology
    notes = [
        f"Time to target = training time (first round's start to the end of the round) until the held-out "
        f"accuracy, evaluated after every round, first reaches {target:g}; speed-up = baseline's time / arm's "
        f"time - 1, paired by repetition (same seed); 'best baseline' = the TCP or MLT arm with the lowest mean.",
        f"Fabric: {topo.name}, {topo.workers} workers (the odd ones behind leaf l1, the PS behind l2), "
        f"{topo.background} background senders x {topo.background_flows} {topo.background_cc}+ECN TCP flows to "
        f"the sink behind l2; each of l1's two uplinks is a {topo.bottleneck_pps:g} packets/s queue of "
        f"{topo.queue_depth} packets. 'background pkt/s' is queue 0's rate over both uplinks in the "
        f"{config.params.get('background_probe_s', 1.5)} s before each job (no job running).",
        "Evidence per run (runs.jsonl metrics): 'busier path share' = the job's push packets counted at the "
        "busier spine / both (0.5 = spread evenly; with 3 workers behind l1, per-flow hashing puts at least "
        "two on one spine); 'prio-queue pkts' = packets of queues 1-6 on the uplinks (gradient DATA with "
        "priority; 0 when the job's DATA shares queue 0 with the background); 'selective drops' = the job's "
        "budgeted drops at all switches (0 when selective drop is off). Tail drops are the queues' overflows.",
        "Without priority: the job's policy says prioritize: false AND its hosts send DATA with TOS 0 "
        "(--priority-hints off). With prioritize: false alone the switch falls back to the DSCP class of "
        "the packet, and gradlane's DSCP 8-15 maps to queue 1, still above the background's queue 0.",
    ]
    capacity = 2 * (topo.bottleneck_pps or 0)
    idle = [f"{r['arm']} rep {r['rep'] + 1}" for r in results.runs
            if capacity and _bg(r) is not None and _bg(r) < 0.1 * capacity]
    if idle:
        notes.append(f"Background below 10% of the uplinks' {capacity:g} pkt/s before the job (not a loaded "
                     f"fabric): {', '.join(idle)}.")
    return Summary(rows=rows, tables=[Table(
        "Per arm (round-time percentiles pooled over repetitions; counters are per run means)",
        ["arm", "what", "runs ok", "time to target s", "speed-up vs best baseline %", "p50 round s",
         "p99 round s", "final accuracy", "selective drops", "tail drops", "busier path share",
         "prio-queue pkts", "background pkt/s"], table)], notes=notes)


# -- plots ------------------------------------------------------------------------------------
def plot(results: Results, config: ExperimentConfig, out_dir: Path) -> list[Path]:
    """Time to target per arm, speed-up over the best baseline per arm (the ablation bars),
    round-time CDF, accuracy over time."""
    arms = results.arms()
    baselines, _, _ = roles(results, config)
    best = best_baseline(results, baselines)
    flagged = [a for a in arms if results.switch_dropped(a)]
    target = config.params.get("target_accuracy", DEFAULT_TARGET)
    out = [
        plots.bars({a: results.metric(a, "time_to_target_s") for a in arms}, out_dir / "time_to_target.png",
                   "seconds", f"Time to {target:g} test accuracy (leaf-spine, background TCP)", flagged=flagged),
    ]
    gradlane_arms = [a for a in arms if a not in baselines and a != best]
    title = f"Speed-up over the best baseline ({best})" if best else "Speed-up over the best baseline (none)"
    out.append(plots.bars({a: speedups(results, a, best) if best else [] for a in gradlane_arms},
                          out_dir / "speedup_by_mechanism.png", "% faster to target accuracy", title,
                          flagged=flagged))
    out.append(plots.round_time_cdf(results, out_dir / "round_time_cdf.png", arms))
    out.append(plots.time_to_accuracy(results, out_dir / "accuracy_over_time.png", arms, target=target))
    return out


def simulated() -> Simulation:
    """How an arm runs in ns-3 (`--backend ns3`): experiments/backends/ns3/dlcp_ablation.py."""
    from experiments.backends.ns3 import dlcp_ablation as ns3  # noqa: PLC0415 (ns-3's modules only when asked for)
    return ns3.SIMULATION
