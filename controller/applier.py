"""Policy application: an operator's or a job's change installed on every switch, all or nothing.

:meth:`PolicyApplier.apply_policy` waits until the change does not collide with a job's pending
one, gives each changed job its next generation (``jobs.py``: epoch, effective round, the
previous entries kept while the change is pending), translates the policy into entries, writes
the difference on every reachable switch (reading them in parallel, rolling back the switches
already changed if one fails), then commits the new state and saves it. The operator's other
changes go the same way: a job's round and regime, and one port's ECN/PCN thresholds.
"""
from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

from controller import errors
from controller import p4names as N
from controller.context import ControllerContext
from controller.desired import POLICY_TABLES
from controller.entries import Entity
from controller.jobs import CAUSES, SETTLE_TIMEOUT_S, JobRuntime, Pending, wire_epoch
from controller.network import SwitchPlan, ecn_entry
from controller.policy import (Job, JobState, Policy, PreviousGeneration, assign_slots,
                               job_signature, translate)
from controller.sync import Changes, Op, apply_changes, diff, rollback


class PolicyApplier:
    """Installs policy changes; ``on_pcn_setting_changed(job)`` hears of a job whose PCN
    setting changed (its control law restarts from the policy's threshold)."""

    def __init__(self, ctx: ControllerContext, *, plan: Callable[[str], SwitchPlan],
                 on_pcn_setting_changed: Callable[[int], None]) -> None:
        self.ctx = ctx
        self.plan = plan
        self.on_pcn_setting_changed = on_pcn_setting_changed

    def apply_policy(self, policy: Policy, job_states: dict[int, JobState] | None = None, *,
                     updates: dict[int, JobState] | None = None, cause: str = "operator",
                     force: bool = True, pcn_thresholds: dict[int, int] | None = None) -> dict[str, Any]:
        """Install ``policy`` on every reachable switch as a diff, all or nothing.

        ``job_states`` replaces every job's state, ``updates`` changes some (merged into the
        current states once any pending change they would collide with has applied). A job
        whose switch or host behaviour changes gets a new policy epoch; while it runs, the
        change applies from the round :meth:`JobRuntime.effective_round_for` gives (``cause``
        ``ps`` = a report of its PS, else an operator or the policy's schedule) and its
        previous entries stay for its previous epoch. ``force`` False skips the switches when
        nothing changed (the per-round reports). ``pcn_thresholds`` replaces the jobs' adapted
        PCN thresholds (the PCN law's output); a job whose PCN setting changed restarts its law
        from the policy's threshold.
        """
        if cause not in CAUSES:
            raise ValueError(cause)
        self.check_priorities(policy)
        ctx = self.ctx
        with ctx.settled:
            states, changed, now = self._wait_for_pending(policy, job_states, updates, cause)
            generations = self._next_generations(policy, states, changed, cause, now)
            pending = {j: g.pending.previous for j, g in generations.items() if g.pending is not None}
            pending.update({j: p for j, p in ctx.jobs.pending().items()
                            if j not in generations and policy.job(j) is not None})
            if not force and not changed and pending == ctx.jobs.pending():
                ctx.state.job_states = states
                return {"switches": {}, "pending": [], "rules": None, "epochs": {}}
            slots = assign_slots(policy, ctx.state.slots)
            thresholds = self._thresholds(policy, pcn_thresholds)
            want = [ctx.codec.normalize(e) for e in translate(policy, slots, states, pending,
                                                              thresholds)]
            summary, skipped = self._install(want)
            ctx.state.policy, ctx.state.slots, ctx.state.job_states = policy, slots, states
            ctx.state.pcn_thresholds = thresholds
            self._commit_generations(policy, generations, cause)
            ctx.save_state()
            return {"switches": summary, "pending": skipped, "rules": len(want),
                    "epochs": {str(j): {"epoch": g.epoch, "effective_round": g.effective_round}
                               for j, g in generations.items()}}

    def _wait_for_pending(self, policy: Policy, job_states: dict[int, JobState] | None,
                          updates: dict[int, JobState] | None,
                          cause: str) -> tuple[dict[int, JobState], list[int], float]:
        """The new job states, the jobs they change, and when: once no changed job's pending
        change blocks this one (waiting on job reports for up to SETTLE_TIMEOUT_S)."""
        ctx = self.ctx
        give_up = time.monotonic() + SETTLE_TIMEOUT_S
        while True:
            now = time.monotonic()
            states = dict(ctx.state.job_states if job_states is None else job_states)
            states.update(updates or {})
            changed = [j for j in {*(x.job_id for x in policy.jobs),
                                   *(x.job_id for x in ctx.state.policy.jobs)}
                       if job_signature(ctx.state.policy.job(j), ctx.state.job_states.get(j, JobState()))
                       != job_signature(policy.job(j), states.get(j, JobState()))]
            blocked = [j for j in changed if ctx.jobs.get(j).blocks(cause, now)]
            if not blocked:
                return states, changed, now
            if now >= give_up:
                rt = ctx.jobs.get(blocked[0])
                raise errors.PolicyError(
                    "job", f"job {rt.job_id}: its previous change (epoch {rt.epoch}) applies from "
                           f"round {rt.effective_round} but its PS last reported round "
                           f"{rt.last_round}; try again once it got there")
            ctx.settled.wait(give_up - now)

    def _thresholds(self, policy: Policy, pcn_thresholds: dict[int, int] | None) -> dict[int, int]:
        """The adapted PCN thresholds to install: a job whose PCN setting changed drops its own
        (back to the policy's) and its law restarts."""
        state = self.ctx.state
        thresholds = dict(state.pcn_thresholds if pcn_thresholds is None else pcn_thresholds)
        for job in policy.jobs:
            old = state.policy.job(job.job_id)
            if old is None or old.pcn != job.pcn:
                thresholds.pop(job.job_id, None)
                self.on_pcn_setting_changed(job.job_id)
        return thresholds

    def _install(self, want: list[Entity]) -> tuple[dict[str, Any], list[str]]:
        """Write ``want``'s policy tables on every reachable switch; on a failure undo the
        switches already written and re-raise. Returns the per-switch summary and the
        switches skipped (not reachable)."""
        ctx = self.ctx
        done: list[tuple[str, list[Op]]] = []
        summary: dict[str, Any] = {}
        skipped = [n for n in ctx.switches if n not in ctx.reachable()]
        targets = ctx.reachable()
        # read every switch's installed classes at once (separate switch processes)
        with ThreadPoolExecutor(max_workers=max(1, len(targets))) as pool:
            reads = [pool.submit(ctx.installed, n, POLICY_TABLES) for n in targets]
        for name, read in zip(targets, reads):
            ms = ctx.switches[name]
            try:
                changes = diff(want, read.result())
                ops = apply_changes(ms.conn, ctx.codec, changes)
            except errors.ControllerError as exc:
                for prev, prev_ops in reversed(done):
                    try:
                        rollback(ctx.switches[prev].conn, ctx.codec, [prev_ops], exc)
                    except errors.ControllerError as rb_exc:
                        ctx.log(f"{prev}: {rb_exc}")
                raise
            done.append((name, ops))
            summary[name] = changes.summary()
        return summary, skipped

    def _commit_generations(self, policy: Policy, generations: dict[int, JobRuntime],
                            cause: str) -> None:
        """Every switch took the entries: the changed jobs' runtimes become current, and a
        removed job's pending change is dropped."""
        jobs = self.ctx.jobs.jobs
        for j, rt in jobs.items():
            if j not in generations and rt.pending is not None and policy.job(j) is None:
                rt.pending = None
        for j, gen in generations.items():
            jobs[j] = gen
            self.ctx.log(f"job {j}: epoch {gen.epoch} applies from round {gen.effective_round} "
                         f"({gen.last_adaptation['what'] if gen.last_adaptation else 'change'}, "
                         f"by {cause})")

    def _next_generations(self, policy: Policy, states: dict[int, JobState], changed: list[int],
                          cause: str, now: float) -> dict[int, JobRuntime]:
        """Copies of the changed jobs' runtimes with their new epoch (committed by the caller
        once every switch took the entries)."""
        state = self.ctx.state
        out: dict[int, JobRuntime] = {}
        for j in changed:
            rt = self.ctx.jobs.get(j)
            new = JobRuntime(**{k: getattr(rt, k) for k in rt.__dataclass_fields__})
            old_job = state.policy.job(j)
            # a job new to an idle tracker starts at epoch 1; every later change counts
            new.epoch = rt.epoch if old_job is None and not rt.running(now) else rt.epoch + 1
            new.effective_round = rt.effective_round_for(cause, now)
            if not rt.running(now) or old_job is None or policy.job(j) is None:
                new.pending = None
            elif rt.pending is not None:   # not blocked: merged into the pending change
                new.pending = rt.pending
            else:
                new.pending = Pending(PreviousGeneration(wire_epoch(rt.epoch), old_job,
                                                         state.job_states.get(j, JobState())),
                                      rt.epoch, new.effective_round)
            new.last_adaptation = {"round": new.effective_round, "epoch": new.epoch, "by": cause,
                                   "what": what_changed(old_job, state.job_states.get(j, JobState()),
                                                        policy.job(j), states.get(j, JobState())),
                                   "at": time.time()}
            out[j] = new
        return out

    def check_priorities(self, policy: Policy) -> None:
        """Every rule's queue must exist on every switch (BMv2 drops priorities >= its queues)."""
        switches = self.ctx.topology.switches
        if not switches:
            return
        fewest = min(switches.values(), key=lambda sw: sw.priority_queues)
        for ji, job in enumerate(policy.jobs):
            for ri, rule in enumerate(job.rules):
                if rule.priority >= fewest.priority_queues:
                    raise errors.PolicyError(
                        f"jobs[{ji}].layers[{ri}].priority",
                        f"queue {rule.priority} does not exist on switch {fewest.name} "
                        f"({fewest.priority_queues} priority queues: 0..{fewest.priority_queues - 1})")

    def set_job_state(self, job_id: int, round_: int | None, critical: bool) -> dict[str, Any]:
        """An operator sets a job's round/regime; re-applies phase-dependent bounds."""
        state = self.ctx.state
        if state.policy.job(job_id) is None:
            raise errors.PolicyError("job", f"no job {job_id} in the current policy")
        with self.ctx.lock:
            if round_ is None:
                round_ = state.job_states.get(job_id, JobState()).round
            result = self.apply_policy(state.policy, updates={job_id: JobState(round_, critical)})
            self.ctx.jobs.get(job_id).set_by = "operator"
            return result

    def set_pcn(self, switch: str, port: int, threshold: int | None = None,
                normal: int | None = None) -> dict[str, Any]:
        """Change one port's PCN (and optionally normal ECN) threshold."""
        ctx = self.ctx
        if switch not in ctx.switches:
            raise errors.ConfigError(f"unknown switch '{switch}' (known: {', '.join(ctx.switches)})")
        if port not in ctx.topology.ports(switch):
            raise errors.ConfigError(f"switch {switch} has no port {port} "
                                     f"(ports: {', '.join(map(str, sorted(ctx.topology.ports(switch))))})")
        with ctx.lock:
            ms = ctx.switches[switch]
            if switch not in ctx.reachable():
                raise errors.UnreachableError(ms.last_error or "not connected", switch)
            cur = ctx.state.ecn_overrides.get(switch, {}).get(
                port, (ctx.options.ecn_normal, ctx.options.ecn_pcn))
            new = (cur[0] if normal is None else normal, cur[1] if threshold is None else threshold)
            entry = ctx.codec.normalize(ecn_entry(port, *new))
            have = {e.key: e for e in ctx.installed(switch, (N.ECN_TABLE,))}
            changes = Changes()
            if entry.key in have:
                if have[entry.key] != entry:
                    changes.modifies.append((have[entry.key], entry))
            else:
                changes.inserts.append(entry)
            apply_changes(ms.conn, ctx.codec, changes)
            ctx.state.ecn_overrides.setdefault(switch, {})[port] = new
            ms.plan = self.plan(switch)
            ctx.save_state()
            return {"switch": switch, "port": port, "normal": new[0], "pcn": new[1]}


def what_changed(old_job: Job | None, old: JobState, new_job: Job | None, new: JobState) -> str:
    """A short description of a job's change, for logs and `gradctl jobs`."""
    if old_job is None:
        return "job added"
    if new_job is None:
        return "job removed"
    if old.critical != new.critical:
        return f"regime {'critical' if new.critical else 'normal'}"
    parts = []
    for r_old, r_new in zip(old_job.rules, new_job.rules):
        a, b = r_old.bound_at(old.round, old.critical), r_new.bound_at(new.round, new.critical)
        if a != b or r_old.layers != r_new.layers:
            parts.append(f"layers {r_new.layers[0]}-{r_new.layers[1]} push {a:g}->{b:g}")
    if len(old_job.rules) != len(new_job.rules):
        parts.append(f"{len(old_job.rules)}->{len(new_job.rules)} rules")
    return "; ".join(parts) or "rules changed"
