"""A small NumPy convolutional network for the 8x8 digits, with flat per-layer tensors.

conv 3x3 (same padding, `filters` maps) -> ReLU -> 2x2 max pool -> dense `hidden` -> ReLU ->
dense classes (softmax). Transport layer 0 is the convolution (kernels row-major as
(tap, filter), then the biases), layer 1 the first dense layer, layer 2 the output layer, so
layer 0 is nearest the input as the gradient header's layer_id requires. The layers differ in
size by two orders of magnitude (a few dozen shared kernel weights, thousands of dense ones),
which is what makes their loss tolerance differ.
"""
from __future__ import annotations

import numpy as np

from hosts.training.flat import FlatLayers

IMAGE_SIDE = 8          # sklearn's digits are 8x8
KERNEL = 3
POOL = 2


def _patches(images: np.ndarray) -> np.ndarray:
    """(n, side*side, KERNEL*KERNEL) 3x3 neighbourhoods of every pixel, zero padded."""
    n = images.shape[0]
    padded = np.pad(images, ((0, 0), (1, 1), (1, 1)))
    taps = [padded[:, dy:dy + IMAGE_SIDE, dx:dx + IMAGE_SIDE]
            for dy in range(KERNEL) for dx in range(KERNEL)]
    return np.stack(taps, axis=-1).reshape(n, IMAGE_SIDE * IMAGE_SIDE, KERNEL * KERNEL)


class SmallCNN(FlatLayers):
    """Parameters and gradients of the conv-pool-dense-dense network; same interface as MLP."""

    INPUTS = IMAGE_SIDE * IMAGE_SIDE

    def __init__(self, filters: int, hidden: int, classes: int, seed: int) -> None:
        rng = np.random.default_rng(seed)
        taps = KERNEL * KERNEL
        pooled = (IMAGE_SIDE // POOL) ** 2 * filters
        self.filters, self.hidden, self.classes = filters, hidden, classes
        self.weights = [(rng.standard_normal((taps, filters)) * np.sqrt(2.0 / taps)).astype(np.float32),
                        (rng.standard_normal((pooled, hidden)) * np.sqrt(2.0 / pooled)).astype(np.float32),
                        (rng.standard_normal((hidden, classes)) * np.sqrt(2.0 / hidden)).astype(np.float32)]
        self.biases = [np.zeros(filters, dtype=np.float32), np.zeros(hidden, dtype=np.float32),
                       np.zeros(classes, dtype=np.float32)]

    def _forward(self, x: np.ndarray) -> dict[str, np.ndarray]:
        n = x.shape[0]
        patches = _patches(x.reshape(n, IMAGE_SIDE, IMAGE_SIDE))
        conv = np.maximum(patches @ self.weights[0] + self.biases[0], 0.0)      # (n, 64, F)
        half = IMAGE_SIDE // POOL
        blocks = (conv.reshape(n, half, POOL, half, POOL, self.filters)
                  .transpose(0, 1, 3, 5, 2, 4).reshape(n, half, half, self.filters, POOL * POOL))
        pooled = blocks.max(axis=-1)
        flat = pooled.reshape(n, -1)
        hidden = np.maximum(flat @ self.weights[1] + self.biases[1], 0.0)
        z = hidden @ self.weights[2] + self.biases[2]
        z = z - z.max(axis=1, keepdims=True)
        e = np.exp(z)
        return {"patches": patches, "conv": conv, "blocks": blocks, "pooled": pooled, "flat": flat,
                "hidden": hidden, "probs": e / e.sum(axis=1, keepdims=True)}

    def loss_and_gradients(self, x: np.ndarray, y: np.ndarray) -> tuple[float, list[np.ndarray]]:
        """Mean cross-entropy on (x, y) and its gradient as flat per-layer tensors."""
        f = self._forward(x)
        n = len(y)
        probs = f["probs"]
        loss = float(-np.mean(np.log(probs[np.arange(n), y] + 1e-12)))
        delta = probs.copy()
        delta[np.arange(n), y] -= 1.0
        delta /= n
        g2w, g2b = f["hidden"].T @ delta, delta.sum(axis=0)
        d_hidden = (delta @ self.weights[2].T) * (f["hidden"] > 0)
        g1w, g1b = f["flat"].T @ d_hidden, d_hidden.sum(axis=0)
        d_pooled = (d_hidden @ self.weights[1].T).reshape(f["pooled"].shape)
        # the gradient goes to the first maximum of each pool window
        blocks = f["blocks"]
        winner = blocks.argmax(axis=-1)[..., None] == np.arange(POOL * POOL)
        d_blocks = winner * d_pooled[..., None]
        half = IMAGE_SIDE // POOL
        d_conv = (d_blocks.reshape(n, half, half, self.filters, POOL, POOL)
                  .transpose(0, 1, 4, 2, 5, 3).reshape(n, IMAGE_SIDE * IMAGE_SIDE, self.filters))
        d_conv = d_conv * (f["conv"] > 0)
        g0w = np.einsum("npt,npf->tf", f["patches"], d_conv)
        g0b = d_conv.sum(axis=(0, 1))
        grads = [np.concatenate([gw.ravel(), gb]).astype(np.float32)
                 for gw, gb in ((g0w, g0b), (g1w, g1b), (g2w, g2b))]
        return loss, grads

    def evaluate(self, x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
        """(mean cross-entropy, accuracy) on (x, y)."""
        probs = self._forward(x)["probs"]
        loss = float(-np.mean(np.log(probs[np.arange(len(y)), y] + 1e-12)))
        return loss, float(np.mean(probs.argmax(axis=1) == y))
