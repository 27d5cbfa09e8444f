"""Parameter-server aggregation of the workers' pushed gradients, holes filled per HoleFill."""
from __future__ import annotations

import numpy as np

from hosts.transport.holes import HoleFill


class PushAggregator:
    """Averages each round's contributions per element; remembers, per worker, its last
    delivered value of every element (needed by HoleFill.PREVIOUS)."""

    def __init__(self, fill: HoleFill) -> None:
        self.fill = fill
        self._last: dict[int, list[np.ndarray]] = {}

    def aggregate(self, values: dict[int, list[np.ndarray]],
                  delivered: dict[int, list[np.ndarray]]) -> list[np.ndarray]:
        """Per layer, the aggregated gradient of one round (ranks = keys of `values`)."""
        ranks = sorted(values)
        workers = len(ranks)
        out = []
        for layer in range(len(values[ranks[0]])):
            total = np.zeros(values[ranks[0]][layer].shape, dtype=np.float64)
            count = np.zeros(total.shape, dtype=np.int64)
            for rank in ranks:
                vals, mask = values[rank][layer], delivered[rank][layer]
                if self.fill is HoleFill.PREVIOUS:
                    last = self._last.setdefault(rank, [None] * len(values[rank]))
                    filled = np.where(mask, vals, 0.0 if last[layer] is None else last[layer])
                    last[layer] = filled.astype(np.float32)
                    total += filled
                else:
                    total += np.where(mask, vals, 0.0)
                count += mask
            if self.fill is HoleFill.MEAN_DELIVERED:
                mean = np.divide(total, count, out=np.zeros_like(total), where=count > 0)
            else:
                mean = total / workers
            out.append(mean.astype(np.float32))
        return out
