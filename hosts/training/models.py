"""The bundled models by name: what `--model` selects and how it is built from the model flags.

mlp: `hosts.training.mlp.MLP` with the `--hidden` widths (layers of similar loss tolerance).
cnn: `hosts.training.cnn.SmallCNN`, `--filters` 3x3 kernels and one dense layer of `--hidden`
     units (a small convolution, a large dense layer and a small output layer, whose loss
     tolerances differ: docs/results/plot_bounds-cnn).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from hosts.errors import ConfigError
from hosts.training.cnn import SmallCNN
from hosts.training.mlp import MLP

MODEL_KINDS = ("mlp", "cnn")


class Model(Protocol):
    """What the agents and the in-process trainer need of a model: flat per-layer tensors."""

    @property
    def num_layers(self) -> int: ...

    def layer_sizes(self) -> list[int]: ...

    def get_flat(self) -> list[np.ndarray]: ...

    def set_flat(self, layers: list[np.ndarray]) -> None: ...

    def loss_and_gradients(self, x: np.ndarray, y: np.ndarray) -> tuple[float, list[np.ndarray]]: ...

    def evaluate(self, x: np.ndarray, y: np.ndarray) -> tuple[float, float]: ...


@dataclass(frozen=True)
class ModelSpec:
    """A bundled model by kind and widths; `build` gives it initialised with a seed."""

    kind: str = "mlp"
    hidden: tuple[int, ...] = (64,)
    filters: int = 16

    def __post_init__(self) -> None:
        if self.kind not in MODEL_KINDS:
            raise ConfigError(f"--model {self.kind!r} is not one of {', '.join(MODEL_KINDS)}")
        if any(h <= 0 for h in self.hidden):
            raise ConfigError(f"--hidden {','.join(map(str, self.hidden))}: widths must be positive")
        if self.kind == "cnn":
            if len(self.hidden) != 1:
                raise ConfigError(f"--model cnn takes one --hidden width (its dense layer), got "
                                  f"{','.join(map(str, self.hidden)) or 'none'}")
            if self.filters <= 0:
                raise ConfigError(f"--filters {self.filters} must be positive")

    @property
    def num_layers(self) -> int:
        """Transport layers (one per weight tensor with its bias)."""
        return 3 if self.kind == "cnn" else len(self.hidden) + 1

    def build(self, features: int, classes: int, seed: int) -> Model:
        """The model for `features` inputs and `classes` outputs, initialised from `seed`."""
        if self.kind == "cnn":
            if features != SmallCNN.INPUTS:
                raise ConfigError(f"--model cnn needs 8x8 images ({SmallCNN.INPUTS} features), "
                                  f"the data has {features}")
            return SmallCNN(self.filters, self.hidden[0], classes, seed)
        return MLP([features, *self.hidden, classes], seed)

    def describe(self) -> dict:
        """A JSON-able record (logged at start, kept with profiles)."""
        out: dict = {"kind": self.kind, "hidden": list(self.hidden)}
        if self.kind == "cnn":
            out["filters"] = self.filters
        return out


def parse_hidden(text: str) -> tuple[int, ...]:
    """'128,64' -> (128, 64); ConfigError on anything else."""
    try:
        return tuple(int(h) for h in text.split(",") if h.strip())
    except ValueError:
        raise ConfigError(f"--hidden {text!r} is not a comma-separated list of widths") from None
