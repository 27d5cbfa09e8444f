"""Jobs and reports: the hosts' side of the policy.

A job's hosts fetch their view of the policy (:meth:`JobReports.job_view`: bounds, queues,
regime, epoch, and the previous generation while a change is pending). Its parameter server
reports every round (:meth:`JobReports.job_report`): the report retires a previous generation
the job has passed, carries the job's regime into the policy (through ``apply_policy``), and
is recorded with the push-stage drops the switches counted for the job that round.
``jobs_status`` and ``phase_status`` are what `gradctl jobs` and `gradctl policy phase` show.
"""
from __future__ import annotations

import time
from typing import Any, Callable

from controller import errors
from controller import p4names as N
from controller.context import ControllerContext
from controller.jobs import JobRuntime, wire_epoch
from controller.policy import JobState, host_view, pcn_threshold

ApplyPolicy = Callable[..., dict[str, Any]]
REPORT_FIELDS = ("round", "regime", "push_s", "round_time_s", "delivered", "bounds", "violations",
                 "deadline_s", "tele_max_qdepth", "tele_qdelay_us", "deadline_adaptation", "epoch")


class JobReports:
    """Job views and PS reports; ``apply_policy`` installs the regime a report carries."""

    def __init__(self, ctx: ControllerContext, *, apply_policy: ApplyPolicy) -> None:
        self.ctx = ctx
        self.apply_policy = apply_policy

    def forget_readings(self) -> None:
        """The switches' counters restarted: no job's last push totals are a baseline."""
        for rt in self.ctx.jobs.jobs.values():
            rt.switch_totals = None

    def job_view(self, job_id: int, layers: int, *, fetch: bool = True) -> dict[str, Any]:
        """The host view of ``job_id`` for a model of ``layers`` layers (docs/contracts.md)."""
        ctx = self.ctx
        with ctx.lock:
            job = ctx.state.policy.job(job_id)
            if job is None:
                raise errors.PolicyError("job", f"no job {job_id} in the current policy")
            rt = ctx.jobs.touch(job_id) if fetch else ctx.jobs.get(job_id)
            if fetch:
                rt.fetched = True
            view = host_view(job, ctx.state.job_states.get(job_id, JobState()), layers)
            view["phase"]["set_by"] = rt.set_by
            view.update(job=job_id, name=job.name, epoch=rt.epoch, wire_epoch=wire_epoch(rt.epoch),
                        effective_round=rt.effective_round, previous=None)
            if rt.pending is not None:
                prev = rt.pending.previous
                old = host_view(prev.job, prev.state, layers)
                old.update(epoch=rt.pending.previous_epoch, wire_epoch=prev.wire_epoch)
                view["previous"] = old
            return view

    def job_report(self, job_id: int, layers: int, report: dict[str, Any]) -> dict[str, Any]:
        """A PS's report of one round: retire a previous generation it passed, follow its
        regime, record the round (with this round's push drops on the switches); the view."""
        ctx = self.ctx
        round_ = report["round"]
        with ctx.settled:
            if ctx.state.policy.job(job_id) is None:
                raise errors.PolicyError("job", f"no job {job_id} in the current policy")
            rt = ctx.jobs.touch(job_id)
            rt.last_round = round_
            retired = rt.pending is not None and round_ >= rt.pending.effective_round
            if retired:
                ctx.log(f"job {job_id}: round {round_} reached, epoch {rt.pending.previous_epoch}'s "
                        "entries removed")
                rt.pending = None
            old = ctx.state.job_states.get(job_id, JobState())
            regime = report.get("regime")
            critical = old.critical if regime is None else regime == "critical"
            if regime is not None:
                rt.set_by = "ps"
            try:
                if not rt.blocks("ps", time.monotonic()):   # else: the next report applies it
                    self.apply_policy(ctx.state.policy, cause="ps", force=retired,
                                      updates={job_id: JobState(round_ + 1, critical)})
            finally:
                ctx.settled.notify_all()
            rt = ctx.jobs.get(job_id)
            switch = self._push_counts(job_id, rt)
            violations = report.get("violations") or []
            rt.violations = [a + b for a, b in zip(rt.violations or [0] * len(violations), violations)]
            rt.reports.append({**{k: report.get(k) for k in REPORT_FIELDS}, "switch_push": switch})
            if report.get("deadline_adaptation"):
                rt.last_deadline_adaptation = {**report["deadline_adaptation"], "at": time.time()}
            view = self.job_view(job_id, layers, fetch=False)
            view["switch_push"] = switch
            return view

    def _push_counts(self, job_id: int, rt: JobRuntime) -> dict[str, int] | None:
        """This round's push-stage (seen, dropped) of the job's classes over every reachable
        switch (the change since the previous report), or None when no switch answered."""
        ctx = self.ctx
        slots = [i.slot for i in ctx.state.slot_infos() if i.job_id == job_id]
        seen = dropped = 0
        answered = False
        for name in ctx.reachable():
            reqs = [ctx.codec.counter_request(c, N.stage_index(slot, False)) for slot in slots
                    for c in (N.STAGE_SEEN_CTR, N.STAGE_DROPPED_CTR)]
            if not reqs:
                continue
            try:
                rows = ctx.read_counters(name, reqs)
            except errors.ControllerError as exc:
                ctx.log(f"{name}: {exc}")
                continue
            answered = True
            seen += sum(pk for c, _, pk, _ in rows if c == N.STAGE_SEEN_CTR)
            dropped += sum(pk for c, _, pk, _ in rows if c == N.STAGE_DROPPED_CTR)
        if not answered:
            return None
        before = rt.switch_totals
        rt.switch_totals = (seen, dropped)
        if before is None:
            return None
        return {"seen": seen - before[0], "dropped": dropped - before[1]}

    def jobs_status(self) -> list[dict[str, Any]]:
        """Every job that fetched its view or reported: round, regime, epoch, per-layer delivered
        vs bound, violations, recent rounds, last adaptation."""
        ctx = self.ctx
        now = time.monotonic()
        out = []
        with ctx.lock:
            for j, rt in sorted(ctx.jobs.jobs.items()):
                job = ctx.state.policy.job(j)
                if job is None or not (rt.fetched or rt.last_round is not None):
                    continue
                st = ctx.state.job_states.get(j, JobState())
                last = rt.reports[-1] if rt.reports else {}
                delivered = last.get("delivered") or []
                bounds = last.get("bounds") or []
                out.append({
                    "job": j, "name": job.name, "running": rt.running(now), "round": rt.last_round,
                    "regime": "critical" if st.critical else "normal", "set_by": rt.set_by,
                    "epoch": rt.epoch, "effective_round": rt.effective_round,
                    "pending": rt.pending is not None,
                    "layers": [{"layer": i, "delivered": d, "bound": b,
                                "violations": rt.violations[i] if i < len(rt.violations) else 0}
                               for i, (d, b) in enumerate(zip(delivered, bounds))],
                    "violations": sum(rt.violations), "rounds": list(rt.reports),
                    "last_adaptation": rt.last_adaptation,
                    "control_laws": {
                        "early_close": job.early_close,
                        "deadline_s": last.get("deadline_s"),
                        "last_deadline_adaptation": rt.last_deadline_adaptation,
                        "pcn_threshold": pcn_threshold(job, ctx.state.pcn_thresholds),
                        "pcn_law": None if job.pcn is None else job.pcn.adapt,
                        "last_pcn_adaptation": ctx.state.last_adaptation(j)},
                    "age_s": round(now - rt.last_seen, 3)})
        return out

    def phase_status(self, job_id: int | None = None) -> list[dict[str, Any]]:
        """Per job of the policy: round, regime and who set it, and the phase bounds now."""
        ctx = self.ctx
        out = []
        with ctx.lock:
            for job in ctx.state.policy.jobs:
                if job_id is not None and job.job_id != job_id:
                    continue
                st = ctx.state.job_states.get(job.job_id, JobState())
                rt = ctx.jobs.get(job.job_id)
                scheduled = st.round is not None and any(
                    ph.rounds[0] <= st.round <= ph.rounds[1] for r in job.rules for ph in r.phases)
                out.append({"job": job.job_id, "name": job.name, "round": st.round,
                            "regime": "critical" if st.critical else "normal", "set_by": rt.set_by,
                            "scheduled": scheduled, "epoch": rt.epoch,
                            "effective_round": rt.effective_round,
                            "bounds": [{"layers": list(r.layers), "mag_classes": list(r.mag_classes),
                                        "push": r.bound_at(st.round, st.critical)} for r in job.rules]})
            if job_id is not None and not out:
                raise errors.PolicyError("job", f"no job {job_id} in the current policy")
        return out
