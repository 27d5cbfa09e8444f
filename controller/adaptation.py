"""Control laws at run time: the PCN threshold law stepped on the switches' counters.

Each step (:meth:`PcnAdaptation.adapt`, every ``--adapt-interval`` s in the daemon) reads, per
job whose law is on, how many of its packets the switches classified and how many met a deep
queue since the previous step, asks the law (``control_laws.py``, pure) for the job's next
threshold, installs the changed thresholds through ``apply_policy`` in one change, and records
each change in the state (the most recent ADAPTATIONS_KEPT). A first reading, or one after the
switches' counters restarted, is only a baseline.
"""
from __future__ import annotations

import threading
import time
from typing import Any, Callable

from controller import errors
from controller import p4names as N
from controller.context import ControllerContext
from controller.control_laws import PcnLawState, PcnObservation, pcn_step
from controller.policy import Job, JobState, pcn_threshold, rule_key

ADAPTATIONS_KEPT = 100   # the most recent control-law changes kept in the state file

ApplyPolicy = Callable[..., dict[str, Any]]


class PcnAdaptation:
    """Every job's PCN law state and last counter reading."""

    def __init__(self, ctx: ControllerContext, *, apply_policy: ApplyPolicy) -> None:
        self.ctx = ctx
        self.apply_policy = apply_policy
        self.laws: dict[int, PcnLawState] = {}
        self.last: dict[int, tuple[int, int]] = {}   # job -> (seen, congested) last read

    def reset_law(self, job_id: int) -> None:
        """The job's PCN setting changed: its law restarts from what is in force."""
        self.laws.pop(job_id, None)

    def forget_readings(self) -> None:
        """The switches' counters restarted: the next reading of every job is a baseline."""
        self.last.clear()

    def _job_counters(self, job_id: int) -> tuple[int, int] | None:
        """(seen, congested) packets of a job's slots summed over every reachable switch;
        None when no switch is reachable."""
        ctx = self.ctx
        job = ctx.state.policy.job(job_id)
        if job is None:
            return None
        slots = [ctx.state.slots[rule_key(job, r)] for r in job.rules
                 if rule_key(job, r) in ctx.state.slots]
        if not slots:
            return None
        totals = [0, 0]
        reached = False
        for name in ctx.reachable():
            reqs = [ctx.codec.counter_request(c, s) for s in slots
                    for c in (N.SLOT_SEEN_CTR, N.SLOT_CONGESTED_CTR)]
            for c, _, pk, _ in ctx.read_counters(name, reqs):
                totals[0 if c == N.SLOT_SEEN_CTR else 1] += pk
            reached = True
        return (totals[0], totals[1]) if reached else None

    def _step(self, job: Job, thresholds: dict[int, int]) -> dict[str, Any] | None:
        """One step of ``job``'s law; the change it makes (a record), or None."""
        assert job.pcn is not None
        now = self._job_counters(job.job_id)
        if now is None:
            return None
        last = self.last.get(job.job_id)
        self.last[job.job_id] = now
        if last is None or now[0] < last[0]:
            return None   # first reading (or counters reset): a baseline only
        current = pcn_threshold(job, thresholds)
        assert current is not None
        law = self.laws.get(job.job_id)
        if law is None or law.threshold != current:
            law = self.laws[job.job_id] = PcnLawState(current, job.pcn.floor, job.pcn.ceiling)
        obs = PcnObservation(now[0] - last[0], now[1] - last[1])
        step = pcn_step(law, obs)
        if not step.changed:
            return None
        return {"time": round(time.time(), 3), "job": job.job_id,
                "law": "pcn_threshold", "value": step.threshold,
                "previous": step.previous, "reason": step.reason,
                "round": self.ctx.state.job_states.get(job.job_id, JobState()).round,
                "seen": obs.seen, "congested": obs.congested}

    def adapt(self) -> list[dict[str, Any]]:
        """One step of the PCN threshold law for every job whose law is on
        (docs/control-laws.md); installs and records each change. Returns the changes."""
        ctx = self.ctx
        changes: list[dict[str, Any]] = []
        with ctx.lock:
            thresholds = dict(ctx.state.pcn_thresholds)
            for job in ctx.state.policy.jobs:
                if job.pcn is None or not job.pcn.adapt:
                    continue
                change = self._step(job, thresholds)
                if change is not None:
                    thresholds[job.job_id] = change["value"]
                    changes.append(change)
            if changes:
                try:
                    self.apply_policy(ctx.state.policy, pcn_thresholds=thresholds)
                except errors.ControllerError:
                    for c in changes:   # not installed: the law restarts from what is in force
                        self.laws.pop(c["job"], None)
                    raise
                ctx.state.adaptations = (ctx.state.adaptations + changes)[-ADAPTATIONS_KEPT:]
                ctx.save_state()
                for c in changes:
                    ctx.log(f"job {c['job']}: PCN threshold {c['previous']} -> {c['value']} "
                            f"({c['reason']})")
        return changes

    def start(self, interval: float) -> threading.Thread | None:
        """Run :meth:`adapt` every ``interval`` seconds until the controller stops (0 = never)."""
        if interval <= 0:
            return None

        def loop() -> None:
            while not self.ctx.stopping.wait(interval):
                try:
                    self.adapt()
                except errors.ControllerError as exc:
                    self.ctx.log(f"PCN law: {exc}")

        thread = threading.Thread(target=loop, daemon=True, name="pcn-law")
        thread.start()
        return thread

    def pcn_jobs(self) -> list[dict[str, Any]]:
        """Per job with a PCN setting: threshold in force, law on/off, bounds, per-switch PCN
        start/arrival counts of that job, and its last adaptation."""
        ctx = self.ctx
        rows = []
        jobs = [j for j in ctx.state.policy.jobs if j.pcn is not None]
        per_switch: dict[str, dict[tuple[str, int], int]] = {}
        for name in ctx.reachable():
            reqs = [ctx.codec.counter_request(c, j.job_id) for j in jobs
                    for c in (N.PCN_JOB_START_CTR, N.PCN_JOB_ARRIVAL_CTR)]
            per_switch[name] = ctx.counter_values(name, reqs) if reqs else {}
        for job in jobs:
            assert job.pcn is not None
            rows.append({"job": job.job_id, "name": job.name,
                         "threshold": pcn_threshold(job, ctx.state.pcn_thresholds),
                         "adapt": job.pcn.adapt, "floor": job.pcn.floor,
                         "ceiling": job.pcn.ceiling, "policy_threshold": job.pcn.threshold,
                         "starts": {n: c.get((N.PCN_JOB_START_CTR, job.job_id), 0)
                                    for n, c in per_switch.items()},
                         "arrivals": {n: c.get((N.PCN_JOB_ARRIVAL_CTR, job.job_id), 0)
                                      for n, c in per_switch.items()},
                         "last_adaptation": ctx.state.last_adaptation(job.job_id)})
        return rows
