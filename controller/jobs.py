"""Running training jobs as the controller sees them: policy epochs, pending changes, PS reports.

A job's policy has an ``epoch`` that grows on every change of what its switches or hosts do. A
change of a running job applies from an ``effective_round`` no host has started yet; until the
job's parameter server reports that round, the job's previous entries stay on the switches for
the previous epoch (docs/contracts.md, Job policy). This module keeps that bookkeeping and the
reports; :class:`controller.applier.PolicyApplier` does the switch writes.
"""
from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from controller.policy import PreviousGeneration

JOB_IDLE_S = 30.0        # a job with no report or fetch for this long is not running
HISTORY = 32             # reports kept per job for `gradctl jobs`
SETTLE_TIMEOUT_S = 10.0  # how long a change waits for the job's previous change to apply
REGIMES = ("critical", "normal")
CAUSES = ("operator", "ps", "policy")


def wire_epoch(epoch: int) -> int:
    """The epoch as stamped in the gradient header: 1..255 (0 = no controller)."""
    return (epoch - 1) % 255 + 1


@dataclass
class Pending:
    """A change not yet in effect for every host: what they follow before ``effective_round``."""

    previous: PreviousGeneration
    previous_epoch: int
    effective_round: int


@dataclass
class JobRuntime:
    """One job's epoch, pending change, regime source and recent reports."""

    job_id: int
    epoch: int = 1
    effective_round: int = 0
    pending: Pending | None = None
    set_by: str = "policy"
    last_round: int | None = None
    fetched: bool = False
    last_seen: float = 0.0
    violations: list[int] = field(default_factory=list)
    reports: deque = field(default_factory=lambda: deque(maxlen=HISTORY))
    last_adaptation: dict[str, Any] | None = None
    last_deadline_adaptation: dict[str, Any] | None = None   # from the PS's reports
    switch_totals: tuple[int, int] | None = None   # push (seen, dropped) at the last report

    def running(self, now: float) -> bool:
        """A host fetched the view or the PS reported within JOB_IDLE_S."""
        return (self.fetched or self.last_round is not None) and now - self.last_seen < JOB_IDLE_S

    def effective_round_for(self, cause: str, now: float) -> int:
        """The first round a change made now may apply to (docs/contracts.md)."""
        if not self.running(now):
            return 0
        if self.last_round is None:
            return 1
        return self.last_round + (1 if cause == "ps" else 2)

    def blocks(self, cause: str, now: float) -> bool:
        """A change now would need a third generation: wait for the pending one to apply."""
        return (self.pending is not None and self.running(now)
                and self.effective_round_for(cause, now) != self.pending.effective_round)


class JobTracker:
    """Every job's :class:`JobRuntime` (created on first use)."""

    def __init__(self) -> None:
        self.jobs: dict[int, JobRuntime] = {}

    def get(self, job_id: int) -> JobRuntime:
        """The runtime of ``job_id``."""
        rt = self.jobs.get(job_id)
        if rt is None:
            rt = self.jobs[job_id] = JobRuntime(job_id)
        return rt

    def touch(self, job_id: int, now: float | None = None) -> JobRuntime:
        """A host of ``job_id`` spoke: a job idle for long starts a new run (reports cleared)."""
        now = time.monotonic() if now is None else now
        rt = self.get(job_id)
        if not rt.running(now):
            rt.last_round, rt.fetched, rt.pending = None, False, None
            rt.violations, rt.switch_totals = [], None
            rt.reports.clear()
        rt.last_seen = now
        return rt

    def pending(self) -> dict[int, PreviousGeneration]:
        """Per job with a pending change, its previous generation (for the switch entries)."""
        return {j: rt.pending.previous for j, rt in self.jobs.items() if rt.pending is not None}
