"""A `torch.nn.Module` seen as the agents see a model: flat per-layer float32 tensors.

Transport layer l = the module's l-th parameter (`named_parameters()` order), flattened; its
name is the parameter's name. Gradients come from autograd on the mean cross-entropy.
"""
from __future__ import annotations

import numpy as np
import torch
from torch import nn


class TorchModel:
    """Wraps `module` (built by the caller under a seed) with the agents' model interface."""

    def __init__(self, module: nn.Module) -> None:
        self.module = module
        self._params = [p for p in module.parameters() if p.requires_grad]
        self._names = [n for n, p in module.named_parameters() if p.requires_grad]

    @property
    def num_layers(self) -> int:
        return len(self._params)

    def layer_names(self) -> list[str]:
        """The parameters' names, one per transport layer."""
        return list(self._names)

    def layer_sizes(self) -> list[int]:
        return [p.numel() for p in self._params]

    def get_flat(self) -> list[np.ndarray]:
        return [p.detach().numpy().ravel().astype(np.float32, copy=True) for p in self._params]

    def set_flat(self, layers: list[np.ndarray]) -> None:
        with torch.no_grad():
            for p, flat in zip(self._params, layers):
                p.copy_(torch.from_numpy(np.asarray(flat, dtype=np.float32)).view_as(p))

    def loss_and_gradients(self, x: np.ndarray, y: np.ndarray) -> tuple[float, list[np.ndarray]]:
        """Mean cross-entropy on (x, y) and its gradient as flat per-layer tensors."""
        self.module.train()
        for p in self._params:
            p.grad = None
        loss = nn.functional.cross_entropy(self.module(torch.from_numpy(x)), torch.from_numpy(y))
        loss.backward()
        grads = [np.zeros(p.numel(), dtype=np.float32) if p.grad is None
                 else p.grad.numpy().ravel().astype(np.float32, copy=True) for p in self._params]
        return loss.item(), grads

    def evaluate(self, x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
        """(mean cross-entropy, accuracy) on (x, y)."""
        self.module.eval()
        with torch.no_grad():
            logits = self.module(torch.from_numpy(x))
            loss = nn.functional.cross_entropy(logits, torch.from_numpy(y))
            accuracy = (logits.argmax(dim=1) == torch.from_numpy(y)).float().mean()
        return float(loss), float(accuracy)
