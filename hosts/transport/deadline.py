"""Acceptance deadlines of a receiver (LTP's Early Close): fixed, adaptive, or telemetry-driven.

Adaptive formula (per stage, at each receiver): every finished round gives one sample, the
longest sender transfer of that round (its first DATA to its close, whether by the bound or by
the deadline). The smoothed transfer time follows S <- S + (sample - S) / 8 (the first sample
sets S), and the deadline of the next round is clamp(multiple x S, floor, ceiling). Before the
first sample the deadline is the configured initial value. A round closed by its deadline feeds
the deadline itself, so a path that slows down raises the next deadline by up to `multiple` per
round until the ceiling.

Telemetry law (mode ``telemetry``, docs/control-laws.md): the same smoothed transfer time S,
plus what the switches wrote into the round's DATA packets (`RoundTelemetry`: largest path
queueing delay, largest queue depth, hop count):

    Q <- Q + (q - Q) / 4              q = the round's largest path queueing delay (s); the
                                      first round with telemetry sets Q = q
    m  = min(2, multiple)     if the round crossed switches (hops > 0) and every queue it met
                             was at most EMPTY_QDEPTH packets deep (nothing waits in a queue:
                             a missing chunk is lost, waiting longer does not bring it)
         multiple (3)        otherwise
    D  = clamp(m x S + headroom x Q, floor, ceiling)      headroom = 2
    D  = min(max(D, D_prev / 2), D_prev x 2)              at most halved or doubled per round

A round without telemetry (no switch on the path, or PLAIN packets) keeps Q and uses
`multiple`, so the law then equals the adaptive formula. Each change of more than
REPORT_CHANGE of the previous value is returned as an `Adaptation` (round, value, reason).
"""
from __future__ import annotations

from dataclasses import dataclass

from hosts.errors import ConfigError

INFINITY = float("inf")
EWMA_GAIN = 1.0 / 8.0
QUEUE_GAIN = 1.0 / 4.0
EMPTY_QDEPTH = 1          # packets: a queue this short holds nothing worth waiting for
HEADROOM = 2.0            # queueing delays of headroom: the queued data, then its resend
EMPTY_MULTIPLE = 2.0
MAX_STEP = 2.0            # the deadline moves at most x2 or /2 per round
REPORT_CHANGE = 0.05      # a change above 5 % of the previous deadline is reported
MODES = ("telemetry", "adaptive", "fixed")


@dataclass(frozen=True)
class DeadlineSettings:
    """mode 'fixed': always `initial` seconds; 'adaptive' and 'telemetry': the laws above."""

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
        if self.mode != "fixed":
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
        extra = (f" + {HEADROOM:g} x path queueing delay (x{EMPTY_MULTIPLE:g} when queues are "
                 f"empty)" if self.mode == "telemetry" else "")
        return (f"{self.mode} {self.multiple:g} x smoothed transfer time{extra} in "
                f"[{self.floor * 1000:g}, {self.ceiling * 1000:g}] ms, start {self.initial * 1000:g} ms")


NO_DEADLINE = DeadlineSettings(mode="fixed", initial=INFINITY)


@dataclass
class RoundTelemetry:
    """What the switches stamped into one round's DATA packets (largest values seen)."""

    packets: int = 0
    max_qdepth: int = 0
    max_qdelay_us: int = 0
    max_hops: int = 0

    def add(self, qdepth: int, qdelay_us: int, hops: int) -> None:
        """One DATA packet's telemetry fields."""
        self.packets += 1
        self.max_qdepth = max(self.max_qdepth, qdepth)
        self.max_qdelay_us = max(self.max_qdelay_us, qdelay_us)
        self.max_hops = max(self.max_hops, hops)

    def as_dict(self) -> dict[str, int]:
        return {"packets": self.packets, "max_qdepth": self.max_qdepth,
                "max_qdelay_us": self.max_qdelay_us, "hops": self.max_hops}


@dataclass(frozen=True)
class Adaptation:
    """One reported change of the deadline: from which round on, the new value, and why."""

    round: int
    value: float
    previous: float
    reason: str

    def as_dict(self) -> dict:
        return {"round": self.round, "deadline_ms": round(self.value * 1000, 3),
                "previous_ms": round(self.previous * 1000, 3), "reason": self.reason}


class Deadline:
    """The current acceptance deadline of one stage at one receiver."""

    def __init__(self, settings: DeadlineSettings) -> None:
        self.settings = settings
        self.smoothed: float | None = None
        self.queue_delay = 0.0
        self._queue_seen = False
        self.empty = False
        self._value = settings.initial
        self.last_adaptation: Adaptation | None = None

    def current(self) -> float:
        """Seconds after a sender's first DATA at which its transfer closes regardless."""
        s = self.settings
        if s.mode == "fixed" or self.smoothed is None:
            return s.initial
        if s.mode == "adaptive":
            return min(max(s.multiple * self.smoothed, s.floor), s.ceiling)
        return self._value

    def observe(self, seconds: float, telemetry: RoundTelemetry | None = None,
                round_: int = 0) -> Adaptation | None:
        """Feed one round's longest sender transfer time (and, for the telemetry law, what the
        switches reported); the adaptation for the next round when it is worth reporting."""
        s = self.settings
        if s.mode == "fixed" or not seconds >= 0 or seconds == INFINITY:
            return None
        before = self.current()
        if self.smoothed is None:
            self.smoothed = seconds
        else:
            self.smoothed += (seconds - self.smoothed) * EWMA_GAIN
        reason = "transfer time"
        if s.mode == "telemetry":
            reason = self._telemetry_step(telemetry, before)
        after = self.current()
        self._value = after   # a later switch to the telemetry law starts from here
        if abs(after - before) <= REPORT_CHANGE * before:
            return None
        self.last_adaptation = Adaptation(round_ + 1, after, before, reason)
        return self.last_adaptation

    def _telemetry_step(self, telemetry: RoundTelemetry | None, before: float) -> str:
        s = self.settings
        assert self.smoothed is not None
        seen = telemetry is not None and telemetry.packets > 0 and telemetry.max_hops > 0
        if seen:
            assert telemetry is not None
            q = telemetry.max_qdelay_us / 1e6
            # the first telemetry sets Q (as the first transfer sets S): starting from 0 made the
            # second round's deadline ignore a queue the first round had already measured
            self.queue_delay = q if not self._queue_seen else \
                self.queue_delay + (q - self.queue_delay) * QUEUE_GAIN
            self._queue_seen = True
            self.empty = telemetry.max_qdepth <= EMPTY_QDEPTH
        else:
            self.empty = False
        multiple = min(EMPTY_MULTIPLE, s.multiple) if self.empty else s.multiple
        base = multiple * self.smoothed
        want = base + HEADROOM * self.queue_delay
        value = min(max(want, s.floor), s.ceiling)
        value = min(max(value, before / MAX_STEP), before * MAX_STEP)
        self._value = value
        if value == s.ceiling and want > s.ceiling:
            return "ceiling"
        if value == s.floor and want < s.floor:
            return "floor"
        if value > before and HEADROOM * self.queue_delay > 0.5 * (value - before) and seen:
            return "queueing delay"
        if value < before and self.empty:
            return "queues empty"
        return "transfer time"
