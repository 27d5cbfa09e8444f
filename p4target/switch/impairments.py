"""Per-port link impairments (delay, jitter, random loss, scheduled loss bursts).

Spec syntax (flag `--impair PORT:SPEC`): comma-separated `key=value` items, e.g.
`1:delay=5ms,jitter=1ms,loss=0.01,burst=2s+200ms@0.7` ("from t=2s for 200ms drop 70%").
Times take `s`, `ms` or `us`; loss values are probabilities in [0, 1].
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

from p4target.switch.errors import OptionError

_UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0}


@dataclass(frozen=True)
class LossBurst:
    """Drop with probability `loss` during [start, start + duration) seconds after switch start."""

    start: float
    duration: float
    loss: float


@dataclass(frozen=True)
class Impairment:
    """What one port does to each frame it carries."""

    delay: float = 0.0
    jitter: float = 0.0
    loss: float = 0.0
    bursts: tuple[LossBurst, ...] = field(default_factory=tuple)

    def describe(self) -> str:
        """Human-readable summary for the log line `impairment port N: ...`."""
        parts = [f"delay={self.delay * 1e3:g}ms", f"jitter={self.jitter * 1e3:g}ms", f"loss={self.loss:g}"]
        parts += [f"burst={b.start:g}s+{b.duration * 1e3:g}ms@{b.loss:g}" for b in self.bursts]
        return ",".join(parts)

    def decide(self, elapsed: float, rng: random.Random) -> float | None:
        """None to drop the frame seen `elapsed` s after start, else the seconds to hold it."""
        loss = self.loss
        for burst in self.bursts:
            if burst.start <= elapsed < burst.start + burst.duration:
                loss = max(loss, burst.loss)
        if loss > 0.0 and rng.random() < loss:
            return None
        hold = self.delay + (rng.uniform(-self.jitter, self.jitter) if self.jitter else 0.0)
        return max(hold, 0.0)


def _duration(text: str, what: str) -> float:
    for suffix in ("us", "ms", "s"):
        if text.endswith(suffix):
            try:
                value = float(text[: -len(suffix)]) * _UNITS[suffix]
            except ValueError:
                break
            if value < 0:
                break
            return value
    raise OptionError(f"bad {what} '{text}': expected a time like 5ms, 200us or 2s")


def _probability(text: str, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 1.0:
        raise OptionError(f"bad {what} '{text}': expected a probability between 0 and 1")
    return value


def parse_impairment(spec: str) -> tuple[int, Impairment]:
    """Parse `PORT:key=value,...` into (port, Impairment); raises OptionError naming the bad item."""
    port_text, sep, body = spec.partition(":")
    if not sep or not port_text.isdigit() or not body:
        raise OptionError(f"bad impairment '{spec}': expected PORT:key=value,...")
    values: dict[str, float] = {}
    bursts: list[LossBurst] = []
    for item in body.split(","):
        key, eq, value = item.partition("=")
        if not eq:
            raise OptionError(f"bad impairment item '{item}': expected key=value")
        if key in ("delay", "jitter"):
            values[key] = _duration(value, key)
        elif key == "loss":
            values[key] = _probability(value, key)
        elif key == "burst":
            window, at, prob = value.partition("@")
            start, plus, length = window.partition("+")
            if not at or not plus:
                raise OptionError(f"bad burst '{value}': expected START+DURATION@LOSS, e.g. 2s+200ms@0.7")
            bursts.append(LossBurst(_duration(start, "burst start"), _duration(length, "burst duration"),
                                    _probability(prob, "burst loss")))
        else:
            raise OptionError(f"unknown impairment '{key}' (choose from delay, jitter, loss, burst)")
    return int(port_text), Impairment(bursts=tuple(bursts), **values)
