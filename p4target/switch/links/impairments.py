"""Per-port link impairments (delay, jitter, random loss, scheduled loss and rate bursts).

Spec syntax (flag `--impair PORT:SPEC`, and the run-time `set_port_impairment` call of
`thrift.links`): comma-separated `key=value` items, e.g.
`1:delay=5ms,jitter=1ms,loss=0.01,burst=2s+200ms@0.7,rateburst=3s+100ms@200`:
- `delay`, `jitter`: hold each frame delay +- uniform jitter (frames may reorder);
- `loss`: drop each frame with this probability;
- `burst=START+DURATION@LOSS`: from START for DURATION drop with probability LOSS;
- `rateburst=START+DURATION@PPS`: from START for DURATION the port sends at most PPS
  packets/s (a microburst of reduced capacity: the queue builds in the traffic manager's
  port shaper, so BMv2 queue metadata shows it; a lower `--port-rate` still wins).
Times take `s`, `ms` or `us`; loss values are probabilities in [0, 1]; burst times count from
when the spec takes effect (switch start for `--impair`, the call for a run-time change).
The whole spec `off` (run time only) clears a port's impairment.
Delay, jitter and loss act after the traffic manager, on frames leaving the port.
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
class RateBurst:
    """Cap the port at `pps` packets/s during [start, start + duration) seconds after the spec
    takes effect."""

    start: float
    duration: float
    pps: float


@dataclass(frozen=True)
class Impairment:
    """What one port does to each frame it carries."""

    delay: float = 0.0
    jitter: float = 0.0
    loss: float = 0.0
    bursts: tuple[LossBurst, ...] = field(default_factory=tuple)
    rate_bursts: tuple[RateBurst, ...] = field(default_factory=tuple)

    def describe(self) -> str:
        """Human-readable summary for the log line `impairment port N: ...`."""
        parts = [f"delay={self.delay * 1e3:g}ms", f"jitter={self.jitter * 1e3:g}ms", f"loss={self.loss:g}"]
        parts += [f"burst={b.start:g}s+{b.duration * 1e3:g}ms@{b.loss:g}" for b in self.bursts]
        parts += [f"rateburst={b.start:g}s+{b.duration * 1e3:g}ms@{b.pps:g}" for b in self.rate_bursts]
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
            if not 0 <= value < float("inf"):   # also refuses nan and inf
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


def _rate(text: str, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0.0 < value < float("inf"):
        raise OptionError(f"bad {what} '{text}': expected packets/s > 0")
    return value


def _window(value: str, key: str, example: str) -> tuple[float, float, str]:
    window, at, amount = value.partition("@")
    start, plus, length = window.partition("+")
    if not at or not plus:
        raise OptionError(f"bad {key} '{value}': expected START+DURATION@{example}")
    return _duration(start, f"{key} start"), _duration(length, f"{key} duration"), amount


def parse_impairment_spec(spec: str) -> Impairment | None:
    """Parse `key=value,...` (no port) into an Impairment, or `off` into None; raises
    OptionError naming the bad item."""
    if spec.strip() == "off":
        return None
    if not spec:
        raise OptionError("empty impairment spec: expected key=value,... or off")
    values: dict[str, float] = {}
    bursts: list[LossBurst] = []
    rate_bursts: list[RateBurst] = []
    for item in spec.split(","):
        key, eq, value = item.partition("=")
        if not eq:
            raise OptionError(f"bad impairment item '{item}': expected key=value")
        if key in ("delay", "jitter"):
            values[key] = _duration(value, key)
        elif key == "loss":
            values[key] = _probability(value, key)
        elif key == "burst":
            start, length, prob = _window(value, "burst", "LOSS, e.g. 2s+200ms@0.7")
            bursts.append(LossBurst(start, length, _probability(prob, "burst loss")))
        elif key == "rateburst":
            start, length, pps = _window(value, "rateburst", "PPS, e.g. 2s+200ms@100")
            rate_bursts.append(RateBurst(start, length, _rate(pps, "rateburst rate")))
        else:
            raise OptionError(f"unknown impairment '{key}' (choose from delay, jitter, loss, burst, rateburst)")
    return Impairment(bursts=tuple(bursts), rate_bursts=tuple(rate_bursts), **values)


def parse_impairment(spec: str) -> tuple[int, Impairment]:
    """Parse `PORT:key=value,...` into (port, Impairment); raises OptionError naming the bad item."""
    port_text, sep, body = spec.partition(":")
    if not sep or not port_text.isdigit() or not body or body.strip() == "off":
        raise OptionError(f"bad impairment '{spec}': expected PORT:key=value,...")
    imp = parse_impairment_spec(body)
    assert imp is not None
    return int(port_text), imp
