"""Phase-aware loss bounds (DBLP): tight bound at the start and in critical regimes, loose otherwise."""
from __future__ import annotations

from hosts.errors import ConfigError

DEFAULT_HIGH_DELTA = 0.40       # P_high = P_low + 40 points
DEFAULT_CRITICAL_CHANGE = 0.5   # relative gradient-norm change that marks a critical regime
MAX_BOUND = 0.95


class PhaseSchedule:
    """Decides at each epoch start whether the push bound is P_low or P_high.

    Training starts at P_low. At every later epoch start the relative change of the gradient L2
    norm since the previous check decides: >= `critical_change` -> critical regime, stay at
    P_low; else P_high. Per-layer bounds are all raised by the same delta.
    """

    def __init__(self, high_delta: float = DEFAULT_HIGH_DELTA,
                 critical_change: float = DEFAULT_CRITICAL_CHANGE) -> None:
        if not 0.0 <= high_delta < 1.0:
            raise ConfigError(f"phase high delta {high_delta} is outside [0, 1)")
        if critical_change <= 0.0:
            raise ConfigError(f"critical gradient-norm change {critical_change} must be > 0")
        self.high_delta = high_delta
        self.critical_change = critical_change
        self.high = False
        self.critical = True
        self._last_norm: float | None = None
        self._norm_sum = 0.0
        self._norm_count = 0

    def observe(self, grad_norm: float) -> None:
        """Record the (aggregated) gradient L2 norm of one round."""
        self._norm_sum += grad_norm
        self._norm_count += 1

    def epoch_start(self) -> bool:
        """Re-decide the phase from the norms seen since the last check; True if P_high now."""
        if self._norm_count == 0:
            return self.high
        norm = self._norm_sum / self._norm_count
        self._norm_sum, self._norm_count = 0.0, 0
        if self._last_norm is None or self._last_norm == 0.0:
            change = float("inf")
        else:
            change = abs(norm - self._last_norm) / self._last_norm
        self._last_norm = norm
        self.critical = change >= self.critical_change
        self.high = not self.critical
        return self.high

    def bounds(self, low: tuple[float, ...]) -> tuple[float, ...]:
        """The push bounds for the current phase given the P_low bounds."""
        if not self.high:
            return low
        return tuple(min(b + self.high_delta, MAX_BOUND) for b in low)
