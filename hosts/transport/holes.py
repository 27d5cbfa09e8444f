"""Bubble filling: what stands in for values that never arrived.

Push stage (at the parameter server, one contribution per worker and element):
  ZERO            DLCP: a missing contribution counts as 0 in the mean over all N workers.
  PREVIOUS        MLT: a missing contribution is that worker's last delivered value of the
                  element (0 before any), then the mean over all N workers.
  MEAN_DELIVERED  the mean over the workers that delivered the element (0 if none did).
Pull stage (at a worker): a lost parameter always keeps its previous value (MLT).
"""
from __future__ import annotations

from enum import Enum

import numpy as np

from hosts.errors import ConfigError

DEFAULT_HOLE_FILL = "mean-delivered"


class HoleFill(str, Enum):
    """The push-stage hole-filling modes (see the module docstring)."""

    ZERO = "zero"
    PREVIOUS = "previous"
    MEAN_DELIVERED = "mean-delivered"

    @classmethod
    def parse(cls, text: str) -> "HoleFill":
        try:
            return cls(text)
        except ValueError:
            names = ", ".join(h.value for h in cls)
            raise ConfigError(f"--hole-fill {text!r} is not one of {names}") from None


def keep_previous(values: np.ndarray, delivered: np.ndarray,
                  previous: np.ndarray | None) -> np.ndarray:
    """A copy of `values` whose undelivered elements take `previous` (0 when there is none)."""
    out = np.array(values, dtype=np.float32, copy=True)
    holes = ~delivered
    if previous is not None:
        out[holes] = np.asarray(previous, dtype=np.float32).ravel()[holes]
    else:
        out[holes] = 0.0
    return out
