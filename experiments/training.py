"""Run one training job on an experiment's session, with progress, and turn the agents' JSON
lines into the harness's round records and the standard per-run metrics.

Most experiments' `run_arm` is `run_training(ctx)` plus a few metrics of their own.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from controller.errors import ControllerError
from experiments.api import ArmContext, finite
from experiments.breakdown import PARTS
from experiments.errors import ExperimentError
from experiments.stats import percentile
from topo.training import TrainingJob, TrainingResult

PROGRESS_EVERY_S = 5.0
ROUND_TIME_MEANING = (
    "Round time = the wall time between two consecutive round ends at the parameter server (workers' "
    "compute, push, pull, control and waiting alike for every transport), not the PS's own gather + "
    "scatter time (that is `ps_time_s` in rounds.jsonl); the first round's is the PS's gather + scatter.")


@dataclass
class TrainingOutcome:
    """A finished job: the raw result, its round records and the standard metrics."""

    result: TrainingResult
    rounds: list[dict[str, Any]]
    metrics: dict[str, Any]

    @property
    def ok(self) -> bool:
        return self.result.ok

    def error(self) -> str | None:
        """One line saying why the job failed; None when it did not."""
        if self.result.ok:
            return None
        bad = [f"{name} exit {code}" for name, code in self.result.exit_codes.items() if code != 0]
        what = "timed out" if self.result.timed_out else "failed"
        return f"training job {what}" + (f" ({', '.join(bad[:4])})" if bad else "")


DEFAULT_POLICY = "controller/policies/default.yaml"


def job_policy(policy_file: str, job_id: int, **job_fields: Any) -> dict[str, Any]:
    """A policy document for one job: the first job's rules of `policy_file` (defaults kept),
    renumbered to `job_id`, with `job_fields` (e.g. the ablation switches) set on it."""
    with open(policy_file) as f:
        doc = yaml.safe_load(f) or {}
    jobs = doc.get("jobs") or []
    if not jobs:
        raise ExperimentError(f"policy file {policy_file} has no job to copy the rules from")
    job = {k: v for k, v in jobs[0].items() if k not in job_fields}
    job.update(job=job_id, name=f"{jobs[0].get('name', 'job')}-job{job_id}", **job_fields)
    return {k: v for k, v in doc.items() if k != "jobs"} | {"jobs": [job]}


def policy_jobs(session: Any) -> list[dict[str, Any]]:
    """The jobs of the controller's running policy (`gradctl --json policy show`)."""
    return session.policy_jobs()


def apply_job_policy(ctx: ArmContext, job_id: int, **job_fields: Any) -> Path:
    """Install the experiment's policy renumbered to `job_id` (`gradctl policy apply`)."""
    session = ctx.session
    template = ctx.config.topology_of(ctx.arm).policy or DEFAULT_POLICY
    path = Path(session.config.log_dir) / f"experiment.job{job_id}.policy.yaml"
    path.write_text(yaml.safe_dump(job_policy(template, job_id, **job_fields), sort_keys=False))
    try:
        session.apply_policy(path.resolve())
    except ControllerError as exc:
        raise ExperimentError(f"gradctl policy apply failed: {str(exc)[:200]}") from None
    return path


def ensure_job_policy(ctx: ArmContext, job_id: int) -> bool:
    """Give our transport's job the switches' help its policy promises. Jobs are numbered 1, 2,
    ... over a run while a policy file names job 1, so a later job would otherwise run with no
    classification, priority or budget at all. Baselines (mlt, tcp) get nothing, by their
    definition. True when a policy was installed here."""
    session = ctx.session
    if session.config.transport != "ltp" or session.controller is None:
        return False
    if any(j.get("job") == job_id for j in policy_jobs(session)):
        return False
    apply_job_policy(ctx, job_id)
    return True


def run_training(ctx: ArmContext, rounds: int | None = None, workers: int | None = None,
                 extra_ps: tuple[str, ...] = (), extra_worker: tuple[str, ...] = (),
                 timeout: float | None = None) -> TrainingOutcome:
    """Run one job (PS + workers) of the arm on the running session: the arm's transport, model,
    seed and agent flags are already in the session's config; `extra_*` add flags. Prints a
    progress line every few seconds. Never raises for a failed job: see TrainingOutcome.ok."""
    session = ctx.session
    cfg = ctx.config
    rounds = rounds or ctx.rounds
    workers = workers or ctx.workers
    timeout = timeout or cfg.timeout_s
    ps_extra = (*cfg.model.ps_args(), *ctx.arm.ps_args, *extra_ps)
    worker_extra = (*cfg.model.worker_args(), *ctx.arm.worker_args, *extra_worker)
    ensure_job_policy(ctx, session.jobs + 1)
    spec = session.job_spec(session.jobs + 1, rounds, workers, ps_extra, worker_extra)
    session.jobs += 1
    job = TrainingJob(session.net, session.topo, session.config.topology_path, session.record,
                      session.config.log_dir, spec, session.host_sysctls())
    started = time.monotonic()
    try:
        job.start()
    except Exception:
        job.stop()
        raise
    deadline = started + timeout
    ps_proc = next(iter(job.processes.values()))
    last_print = started
    while time.monotonic() < deadline:
        if all(p.returncode() is not None for p in job.processes.values()):
            break
        ps_proc.wait_exit(1.0)
        now = time.monotonic()
        if now - last_print >= PROGRESS_EVERY_S:
            last_print = now
            done = ps_proc.output().count('"event":"round"')
            ctx.progress(f"round {done}/{rounds} ({now - started:.0f} s)")
    result = job.wait(max(deadline - time.monotonic(), 0.1))
    records = round_records(result)
    return TrainingOutcome(result, records, standard_metrics(result, records, rounds))


def _ps_records(result: TrainingResult, event: str) -> list[dict[str, Any]]:
    return [r for name, recs in result.records.items() if name.startswith("ps")
            for r in recs if r.get("event") == event]


def _worker_records(result: TrainingResult, event: str) -> list[dict[str, Any]]:
    return [r for name, recs in result.records.items() if name.startswith("worker")
            for r in recs if r.get("event") == event]


def workers_counters(result: TrainingResult) -> dict[str, int] | None:
    """The workers' transport counters (their `done` records) summed over the workers: what
    the pull brought them (late, duplicate, resent DATA) beside what they sent; None when no
    worker logged any."""
    total: dict[str, int] = {}
    for rec in _worker_records(result, "done"):
        counters = rec.get("counters")
        for key, value in (counters.items() if isinstance(counters, dict) else ()):
            total[key] = total.get(key, 0) + int(value)
    return total or None


def round_records(result: TrainingResult) -> list[dict[str, Any]]:
    """One record per round the PS closed: t_s (end of the round, seconds since the first
    round started), round_time_s (wall time between this round's end and the previous one's at
    the PS: workers' compute, push and pull alike for every transport; round 0: the PS's own
    gather + scatter time), per-layer delivered fraction (push, mean over workers), violations
    (push + pull, all layers), queue_depth (deepest switch queue the push met, from in-band
    telemetry; None where packets carry none), accuracy (at epoch ends), the PS's other figures."""
    rounds = sorted(_ps_records(result, "round"), key=lambda r: r.get("round", 0))
    if not rounds:
        return []
    accuracy = {r.get("round"): r.get("accuracy") for r in _ps_records(result, "epoch")}
    origin = float(rounds[0]["t"]) - float(rounds[0].get("time_s") or 0.0)
    pull_violations = _worker_pull_violations(result)
    worker_parts = worker_breakdown(result)
    out = []
    previous = None
    for rec in rounds:
        rnd = rec.get("round")
        end = float(rec["t"])
        cycle = rec.get("time_s") if previous is None else round(end - previous, 6)
        previous = end
        violations = rec.get("violations")
        push_v = sum(violations) if isinstance(violations, list) else None
        out.append({
            "round": rnd,
            "t_s": round(float(rec["t"]) - origin, 6),
            "round_time_s": cycle,
            "ps_time_s": rec.get("time_s"),
            "push_s": rec.get("push_s"),
            "pull_s": rec.get("pull_s"),
            "delivered": rec.get("delivered"),
            "delivered_min": rec.get("delivered_min"),
            "violations": None if push_v is None else push_v + pull_violations.get(rnd, 0),
            "violations_per_layer": violations,
            "closed_by": rec.get("closed_by"),
            "deadline_ms": rec.get("deadline_ms"),
            "retransmissions": rec.get("retransmissions"),
            "resends": rec.get("resends"),
            "bytes": rec.get("bytes"),
            "queue_depth": rec.get("queue_depth"),
            "accuracy": accuracy.get(rnd),
            "epoch": rec.get("epoch"),
            "worker_breakdown": worker_parts.get(rnd),
        })
    return out


def worker_breakdown(result: TrainingResult) -> dict[int, dict[str, float | None]]:
    """round -> the workers' own split of their round (breakdown.PARTS: compute, push, pull,
    control, waiting), each the mean over the workers that reported it; None for a part no
    worker reports (older agents log only push_s and pull_s)."""
    sums: dict[int, dict[str, list[float]]] = {}
    for name, recs in result.records.items():
        if not name.startswith("worker"):
            continue
        for rec in recs:
            if rec.get("event") != "round" or not isinstance(rec.get("round"), int):
                continue
            slot = sums.setdefault(rec["round"], {part: [] for part in PARTS})
            for part in PARTS:
                if finite(rec.get(part)):
                    slot[part].append(float(rec[part]))
    return {rnd: {part: (round(sum(v) / len(v), 6) if v else None) for part, v in parts.items()}
            for rnd, parts in sums.items()}


def _worker_pull_violations(result: TrainingResult) -> dict[int, int]:
    out: dict[int, int] = {}
    for rec in _worker_records(result, "round"):
        if isinstance(rec.get("pull_violations"), list):
            out[rec["round"]] = out.get(rec["round"], 0) + sum(rec["pull_violations"])
    return out


def standard_metrics(result: TrainingResult, rounds: list[dict[str, Any]], planned: int) -> dict[str, Any]:
    """rounds, train_time_s (first round start to last round end), rounds_per_s, round time
    mean/p50/p99, final and best accuracy, accuracy curve [[t_s, round, accuracy]], violations."""
    times = [r["round_time_s"] for r in rounds if finite(r.get("round_time_s"))]
    train_time = rounds[-1]["t_s"] if rounds else None
    curve = [[r["t_s"], r["round"], r["accuracy"]] for r in rounds if finite(r.get("accuracy"))]
    violations = [r["violations"] for r in rounds if finite(r.get("violations"))]
    done = _ps_records(result, "done")
    start = _ps_records(result, "start")
    chunks = start[0].get("chunks") if start else None
    workers = start[0].get("workers") if start else None
    return {
        "rounds": len(rounds),
        "rounds_planned": planned,
        "train_time_s": train_time,
        "rounds_per_s": (len(rounds) / train_time) if train_time else None,
        "round_time_mean_s": (sum(times) / len(times)) if times else None,
        "round_time_p50_s": percentile(times, 50),
        "round_time_p99_s": percentile(times, 99),
        "round_time_max_s": max(times) if times else None,
        "final_accuracy": curve[-1][2] if curve else None,
        "best_accuracy": max(c[2] for c in curve) if curve else None,
        "accuracy_curve": curve,
        "violations": sum(violations) if violations else (0 if rounds else None),
        "retransmissions": sum(r["retransmissions"] or 0 for r in rounds) if rounds else None,
        "job_elapsed_s": round(result.elapsed_s, 3),
        "ps_counters": done[-1].get("counters") if done else None,
        "worker_counters": workers_counters(result),
        # the loss each stage may take, as the PS's agent set it up (first round's policy)
        "push_bounds": start[0].get("push_bounds") if start else None,
        "pull_bounds": start[0].get("pull_bounds") if start else None,
        "bound_scope": (start[0].get("config") or {}).get("bound_scope") if start else None,
        # what one round's push sends through the workers' shared bottleneck (the wire floor)
        "push_packets_per_round": (sum(chunks) * workers
                                   if isinstance(chunks, list) and isinstance(workers, int) else None),
    }


def time_to_accuracy(curve: list[list[float]], target: float) -> float | None:
    """Seconds until the accuracy curve ([[t_s, round, accuracy], ...]) first reaches `target`;
    None when it never does."""
    for t, _, acc in curve:
        if acc is not None and acc >= target:
            return t
    return None
