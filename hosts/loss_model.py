"""Which datagrams a user-space impairment drops: a steady loss rate plus optional periodic
microbursts of heavy loss (DBLP injected 60-90% loss for about one round, 2-3 times per run)."""
from __future__ import annotations

import random
from dataclasses import dataclass

from hosts.errors import ConfigError


@dataclass(frozen=True)
class BurstLoss:
    """`loss` during the first `length` s of every `period` s (from `start`), at most `count`
    bursts (0 = unlimited)."""

    loss: float
    period: float
    length: float
    start: float = 0.0
    count: int = 0

    def __post_init__(self) -> None:
        if not 0.0 <= self.loss <= 1.0:
            raise ConfigError(f"burst loss {self.loss} is outside [0, 1]")
        if self.period <= 0 or not 0 < self.length <= self.period:
            raise ConfigError(f"burst length {self.length} s must be in (0, period {self.period} s]")

    def active(self, elapsed: float) -> bool:
        if elapsed < self.start:
            return False
        index, into = divmod(elapsed - self.start, self.period)
        return into < self.length and (self.count == 0 or index < self.count)


class LossModel:
    """Seeded drop decisions: `drop(elapsed)` with `elapsed` seconds since the impairment began."""

    def __init__(self, loss: float, seed: int = 0, burst: BurstLoss | None = None) -> None:
        if not 0.0 <= loss <= 1.0:
            raise ConfigError(f"loss {loss} is outside [0, 1]")
        self.loss = loss
        self.burst = burst
        self._rng = random.Random(seed)

    def in_burst(self, elapsed: float) -> bool:
        return self.burst is not None and self.burst.active(elapsed)

    def drop(self, elapsed: float) -> bool:
        rate = self.burst.loss if self.in_burst(elapsed) else self.loss
        return self._rng.random() < rate
