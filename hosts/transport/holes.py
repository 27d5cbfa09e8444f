"""Bubble filling: what a receiver puts where chunks never arrived."""
from __future__ import annotations

from enum import Enum

import numpy as np

from hosts.errors import ConfigError


class HoleFill(str, Enum):
    """ZEROS: lost values become 0. PREVIOUS: lost values keep the previous round's value."""

    ZEROS = "zeros"
    PREVIOUS = "previous"

    @classmethod
    def parse(cls, text: str) -> "HoleFill":
        try:
            return cls(text)
        except ValueError:
            raise ConfigError(f"hole fill {text!r} is not one of zeros, previous") from None


def fill_holes(values: np.ndarray, delivered: np.ndarray, policy: HoleFill,
               previous: np.ndarray | None) -> np.ndarray:
    """A copy of `values` with undelivered elements filled per `policy`.

    PREVIOUS without a previous round (first round) falls back to zeros.
    """
    out = np.array(values, dtype=np.float32, copy=True)
    holes = ~delivered
    if policy is HoleFill.PREVIOUS and previous is not None:
        out[holes] = np.asarray(previous, dtype=np.float32).ravel()[holes]
    else:
        out[holes] = 0.0
    return out
