"""What the controller must remember across a restart: the policy and what grew from it.

:class:`ControllerState` is the content of the daemon's state file (``statefile.py`` reads and
writes the file itself): the policy in force, the budget slot of each of its rules, each job's
round and regime, per-port ECN/PCN overrides, the PCN thresholds the control law adapted, the
law's recent changes, and each job's policy epoch with its history (so that a restarted daemon
numbers the next change after the last one and no agent sees an epoch go backwards). Every part of the controller shares one instance and changes it in
place under the controller's lock.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from controller.policy import (JobState, Policy, RuleKey, SlotInfo, empty_policy, parse_policy,
                               slot_table)


EPOCH_HISTORY = 64   # epoch changes kept per job in the state file


@dataclass
class JobEpochs:
    """One job's policy epoch now, the round it applies from, and its last changes (oldest
    first: {epoch, effective_round, by})."""

    epoch: int = 1
    effective_round: int = 0
    history: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class ControllerState:
    """What must survive a controller restart: the policy, slot assignment, PCN overrides."""

    policy: Policy = field(default_factory=empty_policy)
    slots: dict[RuleKey, int] = field(default_factory=dict)
    job_states: dict[int, JobState] = field(default_factory=dict)
    ecn_overrides: dict[str, dict[int, tuple[int, int]]] = field(default_factory=dict)
    pcn_thresholds: dict[int, int] = field(default_factory=dict)   # adapted, per job
    adaptations: list[dict[str, Any]] = field(default_factory=list)
    epochs: dict[int, JobEpochs] = field(default_factory=dict)   # per job

    def record_epoch(self, job_id: int, epoch: int, effective_round: int, by: str) -> None:
        """``job_id``'s policy is at ``epoch`` from ``effective_round`` on (set by ``by``)."""
        entry = self.epochs.setdefault(job_id, JobEpochs())
        entry.epoch, entry.effective_round = epoch, effective_round
        entry.history.append({"epoch": epoch, "effective_round": effective_round, "by": by})
        del entry.history[:-EPOCH_HISTORY]

    def slot_infos(self) -> list[SlotInfo]:
        """What each budget slot of the current policy stands for."""
        return slot_table(self.policy, self.slots, self.job_states)

    def last_adaptation(self, job_id: int) -> dict[str, Any] | None:
        """The most recent recorded control-law change of ``job_id``."""
        return next((a for a in reversed(self.adaptations) if a.get("job") == job_id), None)

    def to_json(self) -> dict[str, Any]:
        """The JSON form written to the state file."""
        return {
            "policy": dict(self.policy.document),
            "slots": [[list(k), v] for k, v in self.slots.items()],
            "job_states": {str(j): {"round": s.round, "critical": s.critical}
                           for j, s in self.job_states.items()},
            "ecn_overrides": {sw: {str(p): list(v) for p, v in ports.items()}
                              for sw, ports in self.ecn_overrides.items()},
            "pcn_thresholds": {str(j): v for j, v in self.pcn_thresholds.items()},
            "adaptations": self.adaptations,
            "epochs": {str(j): {"epoch": e.epoch, "effective_round": e.effective_round,
                                "history": e.history} for j, e in self.epochs.items()},
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "ControllerState":
        """Rebuild the state from its JSON form (the policy is revalidated)."""
        return cls(
            policy=parse_policy(data.get("policy") or {"jobs": []}, allow_empty=True),
            slots={tuple(k): int(v) for k, v in data.get("slots", [])},  # type: ignore[misc]
            job_states={int(j): JobState(s.get("round"), bool(s.get("critical")))
                        for j, s in data.get("job_states", {}).items()},
            ecn_overrides={sw: {int(p): (int(v[0]), int(v[1])) for p, v in ports.items()}
                           for sw, ports in data.get("ecn_overrides", {}).items()},
            pcn_thresholds={int(j): int(v) for j, v in data.get("pcn_thresholds", {}).items()},
            adaptations=[a for a in data.get("adaptations", []) if isinstance(a, dict)],
            epochs={int(j): JobEpochs(int(e["epoch"]), int(e["effective_round"]),
                                      [dict(h) for h in e.get("history", [])])
                    for j, e in data.get("epochs", {}).items()},
        )
