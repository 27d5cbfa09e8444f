"""A NumPy multilayer perceptron (ReLU hidden layers, softmax output) with flat per-layer tensors.

Transport layer l = the weights and bias of network layer l, flattened (W row-major, then b),
so layer 0 is nearest the input as the gradient header's layer_id requires.
"""
from __future__ import annotations

import numpy as np

from hosts.training.flat import FlatLayers


class MLP(FlatLayers):
    """Parameters of an MLP with layer sizes `sizes` (input, hidden..., output)."""

    def __init__(self, sizes: list[int], seed: int) -> None:
        rng = np.random.default_rng(seed)
        self.sizes = list(sizes)
        self.weights = [(rng.standard_normal((a, b)) * np.sqrt(2.0 / a)).astype(np.float32)
                        for a, b in zip(sizes[:-1], sizes[1:])]
        self.biases = [np.zeros(b, dtype=np.float32) for b in sizes[1:]]

    def forward(self, x: np.ndarray) -> list[np.ndarray]:
        """Activations of every layer; the last one is the softmax output."""
        acts = [x]
        for i, (w, b) in enumerate(zip(self.weights, self.biases)):
            z = acts[-1] @ w + b
            if i < self.num_layers - 1:
                acts.append(np.maximum(z, 0.0))
            else:
                z = z - z.max(axis=1, keepdims=True)
                e = np.exp(z)
                acts.append(e / e.sum(axis=1, keepdims=True))
        return acts

    def loss_and_gradients(self, x: np.ndarray, y: np.ndarray) -> tuple[float, list[np.ndarray]]:
        """Mean cross-entropy on (x, y) and its gradient as flat per-layer tensors."""
        acts = self.forward(x)
        probs = acts[-1]
        n = len(y)
        loss = float(-np.mean(np.log(probs[np.arange(n), y] + 1e-12)))
        delta = probs.copy()
        delta[np.arange(n), y] -= 1.0
        delta /= n
        grads: list[np.ndarray] = [np.empty(0)] * self.num_layers
        for i in range(self.num_layers - 1, -1, -1):
            gw = acts[i].T @ delta
            gb = delta.sum(axis=0)
            grads[i] = np.concatenate([gw.ravel(), gb]).astype(np.float32)
            if i:
                delta = (delta @ self.weights[i].T) * (acts[i] > 0)
        return loss, grads

    def evaluate(self, x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
        """(mean cross-entropy, accuracy) on (x, y)."""
        probs = self.forward(x)[-1]
        loss = float(-np.mean(np.log(probs[np.arange(len(y)), y] + 1e-12)))
        return loss, float(np.mean(probs.argmax(axis=1) == y))


class MomentumSGD:
    """SGD with momentum on flat per-layer tensors (held by the parameter server)."""

    def __init__(self, lr: float, momentum: float) -> None:
        self.lr = lr
        self.momentum = momentum
        self._velocity: list[np.ndarray] | None = None

    def step(self, params: list[np.ndarray], grads: list[np.ndarray]) -> list[np.ndarray]:
        if self._velocity is None:
            self._velocity = [np.zeros_like(p) for p in params]
        out = []
        for i, (p, g) in enumerate(zip(params, grads)):
            self._velocity[i] = self.momentum * self._velocity[i] + g
            out.append((p - self.lr * self._velocity[i]).astype(np.float32))
        return out
