"""What the controller must remember across a restart: the policy and what grew from it.

:class:`ControllerState` is the content of the daemon's state file (``statefile.py`` reads and
writes the file itself): the policy in force, the budget slot of each of its rules, each job's
round and regime, per-port ECN/PCN overrides, the PCN thresholds the control law adapted, and
the law's recent changes. Every part of the controller shares one instance and changes it in
place under the controller's lock.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from controller.policy import (JobState, Policy, RuleKey, SlotInfo, empty_policy, parse_policy,
                               slot_table)


@dataclass
class ControllerState:
    """What must survive a controller restart: the policy, slot assignment, PCN overrides."""

    policy: Policy = field(default_factory=empty_policy)
    slots: dict[RuleKey, int] = field(default_factory=dict)
    job_states: dict[int, JobState] = field(default_factory=dict)
    ecn_overrides: dict[str, dict[int, tuple[int, int]]] = field(default_factory=dict)
    pcn_thresholds: dict[int, int] = field(default_factory=dict)   # adapted, per job
    adaptations: list[dict[str, Any]] = field(default_factory=list)

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
        )
