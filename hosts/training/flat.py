"""Per-layer flat tensors of a model held as weight and bias arrays: the transport's layers."""
from __future__ import annotations

import numpy as np


class FlatLayers:
    """Transport layer l = `weights[l]` flattened row-major, then `biases[l]`."""

    weights: list[np.ndarray]
    biases: list[np.ndarray]

    @property
    def num_layers(self) -> int:
        return len(self.weights)

    def layer_sizes(self) -> list[int]:
        return [w.size + b.size for w, b in zip(self.weights, self.biases)]

    def get_flat(self) -> list[np.ndarray]:
        return [np.concatenate([w.ravel(), b]) for w, b in zip(self.weights, self.biases)]

    def set_flat(self, layers: list[np.ndarray]) -> None:
        for i, flat in enumerate(layers):
            w = self.weights[i]
            self.weights[i] = np.asarray(flat[:w.size], dtype=np.float32).reshape(w.shape).copy()
            self.biases[i] = np.asarray(flat[w.size:], dtype=np.float32).copy()
