"""Phase-aware loss bounds (DBLP): P_low at the start and in critical regimes, P_high otherwise.

Every `check_every` rounds (the authors' code: 10) the mean gradient L2 norm of the rounds since
the last check is compared with the previous check's: a relative change >= `critical_change`
marks a critical regime (stay at P_low), else the push bound is raised to P_high = P_low +
`high_delta`. With `per_layer` each layer is judged on its own norm; otherwise one decision on
the whole model's norm applies to every layer. A bound-0 (critical) layer is never relaxed.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

from hosts.errors import ConfigError

DEFAULT_HIGH_DELTA = 0.40       # P_high = P_low + 40 points
DEFAULT_CRITICAL_CHANGE = 0.5   # relative gradient-norm change that marks a critical regime
DEFAULT_CHECK_ROUNDS = 10       # DBLP's code checks the gradient norm every 10 iterations
MAX_BOUND = 0.95


class PhaseSchedule:
    """Decides after every `check_every` rounds which layers' push bounds are P_high."""

    def __init__(self, num_layers: int, high_delta: float = DEFAULT_HIGH_DELTA,
                 critical_change: float = DEFAULT_CRITICAL_CHANGE,
                 check_every: int = DEFAULT_CHECK_ROUNDS, per_layer: bool = False) -> None:
        if not 0.0 <= high_delta < 1.0:
            raise ConfigError(f"--phase-delta {high_delta} is outside [0, 1)")
        if critical_change <= 0.0:
            raise ConfigError(f"critical gradient-norm change {critical_change} must be > 0")
        if check_every < 1:
            raise ConfigError(f"--phase-check-rounds {check_every} must be at least 1")
        self.num_layers = num_layers
        self.high_delta = high_delta
        self.critical_change = critical_change
        self.check_every = check_every
        self.per_layer = per_layer
        groups = num_layers if per_layer else 1
        self.high = [False] * num_layers
        self._last: list[float | None] = [None] * groups
        self._sums = [0.0] * groups
        self._rounds = 0

    def observe(self, layer_norms: Sequence[float]) -> bool:
        """Record one round's per-layer gradient L2 norms; every `check_every` rounds decide
        anew. True when this round ended with a check."""
        if len(layer_norms) != self.num_layers:
            raise ValueError("one norm per layer")
        if self.per_layer:
            for i, n in enumerate(layer_norms):
                self._sums[i] += n
        else:
            self._sums[0] += math.sqrt(sum(n * n for n in layer_norms))
        self._rounds += 1
        if self._rounds < self.check_every:
            return False
        for g, total in enumerate(self._sums):
            norm = total / self._rounds
            last = self._last[g]
            change = math.inf if not last else abs(norm - last) / last
            self._last[g] = norm
            high = change < self.critical_change
            for layer in (range(self.num_layers) if not self.per_layer else (g,)):
                self.high[layer] = high
        self._sums = [0.0] * len(self._sums)
        self._rounds = 0
        return True

    @property
    def phase(self) -> str:
        """'low', 'high', or 'mixed' (per-layer decisions differ)."""
        if all(self.high):
            return "high"
        return "mixed" if any(self.high) else "low"

    def bounds(self, low: Sequence[float]) -> tuple[float, ...]:
        """The push bounds for the current phase given the P_low bounds; 0 stays 0."""
        return tuple(min(b + self.high_delta, MAX_BOUND) if high and b > 0.0 else b
                     for b, high in zip(low, self.high))
