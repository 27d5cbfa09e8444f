"""What one round's push (gather at the PS) and pull (at a worker) produced."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Gathered:
    """Per worker rank: reassembled layers and which elements arrived."""

    values: dict[int, list[np.ndarray]]
    delivered: dict[int, list[np.ndarray]]
    fractions: dict[int, list[float]]
    closed_by: dict[int, str | None]
    seconds: float
    deadline: float = float("inf")
    telemetry: dict = field(default_factory=dict)
    adaptation: dict | None = None   # the deadline's change for the next round, if reported
    max_qdepth: int | None = None   # deepest switch queue the push met (telemetry), None if unknown
    lost: list[int] = field(default_factory=list)   # ranks the round went on without (absent)
    # seconds between the first and the last worker's first push DATA at the PS (UDP; None
    # with fewer than two workers heard, or over TCP)
    start_spread: float | None = None

    def mean_fractions(self) -> list[float]:
        per_rank = list(self.fractions.values())
        if not per_rank:   # every worker absent
            return []
        return [float(np.mean([f[i] for f in per_rank])) for i in range(len(per_rank[0]))]

    def min_fractions(self) -> list[float]:
        per_rank = list(self.fractions.values())
        if not per_rank:
            return []
        return [float(min(f[i] for f in per_rank)) for i in range(len(per_rank[0]))]


@dataclass
class Pulled:
    """The parameters a worker received in one round (holes marked in `delivered`)."""

    values: list[np.ndarray]
    delivered: list[np.ndarray]
    fractions: list[float]
    closed_by: str | None
    last: bool
    seconds: float
    wait: float | None = None   # of `seconds`, before the PS's first pull DATA arrived (UDP)
    deadline: float = float("inf")
    telemetry: dict = field(default_factory=dict)
    adaptation: dict | None = None
