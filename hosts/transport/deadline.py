"""Acceptance deadlines of a receiver (LTP's Early Close): fixed, or adapted to measured rounds.

Adaptive formula (per stage, at each receiver): every finished round gives one sample, the
longest sender transfer of that round (its first DATA to its close, whether by the bound or by
the deadline). The smoothed transfer time follows S <- S + (sample - S) / 8 (the first sample
sets S), and the deadline of the next round is clamp(multiple x S, floor, ceiling). Before the
first sample the deadline is the configured initial value. A round closed by its deadline feeds
the deadline itself, so a path that slows down raises the next deadline by up to `multiple` per
round until the ceiling.
"""
from __future__ import annotations

from dataclasses import dataclass

from hosts.errors import ConfigError

INFINITY = float("inf")
EWMA_GAIN = 1.0 / 8.0
MODES = ("adaptive", "fixed")


@dataclass(frozen=True)
class DeadlineSettings:
    """mode 'fixed': always `initial` seconds; 'adaptive': the formula above."""

    mode: str = "fixed"
    initial: float = 0.5
    floor: float = 0.2
    ceiling: float = 2.0
    multiple: float = 3.0

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ConfigError(f"--deadline {self.mode!r} is not one of {', '.join(MODES)}")
        if not self.initial > 0:
            raise ConfigError("--deadline-ms must be positive")
        if self.mode == "adaptive":
            if not 0 < self.floor <= self.ceiling:
                raise ConfigError(f"--deadline-floor-ms {self.floor * 1000:g} must be positive and "
                                  f"at most --deadline-ceiling-ms {self.ceiling * 1000:g}")
            if not self.multiple >= 1.0:
                raise ConfigError(f"--deadline-mult {self.multiple:g} must be at least 1")

    def describe(self) -> str:
        if self.initial == INFINITY:
            return "none (reliable)"
        if self.mode == "fixed":
            return f"fixed {self.initial * 1000:g} ms"
        return (f"adaptive {self.multiple:g} x smoothed transfer time in "
                f"[{self.floor * 1000:g}, {self.ceiling * 1000:g}] ms, start {self.initial * 1000:g} ms")


NO_DEADLINE = DeadlineSettings(mode="fixed", initial=INFINITY)


class Deadline:
    """The current acceptance deadline of one stage at one receiver."""

    def __init__(self, settings: DeadlineSettings) -> None:
        self.settings = settings
        self.smoothed: float | None = None

    def current(self) -> float:
        """Seconds after a sender's first DATA at which its transfer closes regardless."""
        s = self.settings
        if s.mode == "fixed" or self.smoothed is None:
            return s.initial
        return min(max(s.multiple * self.smoothed, s.floor), s.ceiling)

    def observe(self, seconds: float) -> None:
        """Feed one round's longest sender transfer time (ignored for a fixed deadline)."""
        if self.settings.mode == "fixed" or not seconds >= 0 or seconds == INFINITY:
            return
        if self.smoothed is None:
            self.smoothed = seconds
        else:
            self.smoothed += (seconds - self.smoothed) * EWMA_GAIN
