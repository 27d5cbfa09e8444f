"""Parameter-server aggregation: per element, the mean over the workers that delivered it."""
from __future__ import annotations

import numpy as np

from hosts.transport.holes import HoleFill


def mean_of_delivered(values: list[list[np.ndarray]], delivered: list[list[np.ndarray]],
                      fill: HoleFill, previous: list[np.ndarray] | None) -> list[np.ndarray]:
    """Per layer, per element: mean over the workers whose chunk arrived; elements no worker
    delivered are filled per `fill` (zeros, or the previous round's aggregate)."""
    out = []
    for layer in range(len(values[0])):
        total = np.zeros_like(values[0][layer], dtype=np.float64)
        count = np.zeros(values[0][layer].shape, dtype=np.int64)
        for vals, mask in zip(values, delivered):
            total += np.where(mask[layer], vals[layer], 0.0)
            count += mask[layer]
        mean = np.divide(total, count, out=np.zeros_like(total), where=count > 0)
        holes = count == 0
        if fill is HoleFill.PREVIOUS and previous is not None:
            mean[holes] = previous[layer][holes]
        out.append(mean.astype(np.float32))
    return out
