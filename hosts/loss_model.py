"""Which datagrams a user-space impairment drops: a steady loss rate plus scheduled bursts of
heavy loss (DBLP injected 60-90% loss for about one round, 2-3 times per run).

Bursts use the embedded switch's syntax (`--impair PORT:burst=...`, `topo.run --burst`), so one
spelling works for every impairment in the project: `START+DURATION@LOSS`, e.g. `2s+200ms@0.7`
(times take `s`, `ms` or `us` and count from when the impairment begins; LOSS is a probability).
`hosts` does not import the switch, so it parses that syntax here; a test checks both parsers
agree on the same cases.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Sequence

from hosts.errors import ConfigError

BURST_SYNTAX = "START+DURATION@LOSS"
_UNITS = (("us", 1e-6), ("ms", 1e-3), ("s", 1.0))


@dataclass(frozen=True)
class LossBurst:
    """Drop with probability `loss` during [start, start + duration) seconds."""

    start: float
    duration: float
    loss: float

    def active(self, elapsed: float) -> bool:
        """Whether `elapsed` seconds after the impairment began fall in this burst."""
        return self.start <= elapsed < self.start + self.duration


def parse_burst(text: str) -> LossBurst:
    """`START+DURATION@LOSS` (e.g. `2s+200ms@0.7`) as a LossBurst; ConfigError names what is wrong."""
    window, at, loss_text = text.partition("@")
    start_text, plus, duration_text = window.partition("+")
    if not at or not plus:
        raise ConfigError(f"bad burst '{text}': expected {BURST_SYNTAX}, e.g. 2s+200ms@0.7")
    return LossBurst(_seconds(start_text, "burst start"), _seconds(duration_text, "burst duration"),
                     _probability(loss_text, "burst loss"))


def _seconds(text: str, what: str) -> float:
    for suffix, scale in _UNITS:
        if text.endswith(suffix):
            try:
                value = float(text[: -len(suffix)]) * scale
            except ValueError:
                break
            if value >= 0 and math.isfinite(value):
                return value
            break
    raise ConfigError(f"bad {what} '{text}': expected a time like 5ms, 200us or 2s")


def _probability(text: str, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 1.0:
        raise ConfigError(f"bad {what} '{text}': expected a probability between 0 and 1")
    return value


class LossModel:
    """Seeded drop decisions: `drop(elapsed)` with `elapsed` seconds since the impairment began.
    During a burst the higher of the steady and the burst loss applies (as on the switch)."""

    def __init__(self, loss: float, seed: int = 0, bursts: Sequence[LossBurst] = ()) -> None:
        if not 0.0 <= loss <= 1.0:
            raise ConfigError(f"loss {loss} is outside [0, 1]")
        self.loss = loss
        self.bursts = tuple(bursts)
        self._rng = random.Random(seed)

    def in_burst(self, elapsed: float) -> bool:
        """Whether a burst is on `elapsed` seconds after the impairment began."""
        return any(burst.active(elapsed) for burst in self.bursts)

    def drop(self, elapsed: float) -> bool:
        """Whether to drop a datagram seen `elapsed` seconds after the impairment began."""
        rate = max([self.loss, *(b.loss for b in self.bursts if b.active(elapsed))])
        return self._rng.random() < rate
