"""The bundled models by name: what `--model` selects and how it is built from the model flags.

mlp: `hosts.training.mlp.MLP` with the `--hidden` widths (layers of similar loss tolerance).
cnn: `hosts.training.cnn.SmallCNN`, `--filters` 3x3 kernels and one dense layer of `--hidden`
     units (a small convolution, a large dense layer and a small output layer, whose loss
     tolerances differ: docs/results/plot_bounds-cnn).
The PyTorch models (`hosts.training.torch_nets`, imported only when one is selected), whose
transport layers are the module's parameters:
torch-mlp: the MLP as a torch module (weights and biases are separate layers).
torch-cnn: the small CNN as a torch module.
resnet: a small ResNet-style CNN, `--filters` maps in its first stage (group norm, classifier).
transformer: a small transformer on a generated sequence task (`hosts.training.sequences`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from hosts.errors import ConfigError
from hosts.training import dataset
from hosts.training.cnn import SmallCNN
from hosts.training.mlp import MLP

MODEL_KINDS = ("mlp", "cnn", "torch-mlp", "torch-cnn", "resnet", "transformer")
TORCH_KINDS = ("torch-mlp", "torch-cnn", "resnet", "transformer")
_IMAGE_KINDS = ("cnn", "torch-cnn", "resnet")


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
        if self.kind in ("cnn", "torch-cnn"):
            if len(self.hidden) != 1:
                raise ConfigError(f"--model cnn takes one --hidden width (its dense layer), got "
                                  f"{','.join(map(str, self.hidden)) or 'none'}")
        if self.kind in ("cnn", "torch-cnn", "resnet") and self.filters <= 0:
            raise ConfigError(f"--filters {self.filters} must be positive")

    @property
    def torch(self) -> bool:
        """A PyTorch model (transport layers = its parameters)."""
        return self.kind in TORCH_KINDS

    @property
    def num_layers(self) -> int:
        """Transport layers (NumPy: one per weight tensor with its bias; torch: one per
        parameter)."""
        if self.torch:
            return len(self.layer_names())
        return 3 if self.kind == "cnn" else len(self.hidden) + 1

    def load_data(self, seed: int) -> dataset.Dataset:
        """The data this model trains on: the digits, or the generated sequences."""
        if self.kind == "transformer":
            from hosts.training import sequences
            return sequences.generate(seed)
        return dataset.load(seed)

    def build(self, features: int, classes: int, seed: int) -> Model:
        """The model for `features` inputs and `classes` outputs, initialised from `seed`."""
        if self.kind in _IMAGE_KINDS and features != SmallCNN.INPUTS:
            raise ConfigError(f"--model {self.kind} needs 8x8 images ({SmallCNN.INPUTS} "
                              f"features), the data has {features}")
        if self.torch:
            from hosts.training.torch_model import TorchModel
            return TorchModel(self.module(features, classes, seed))
        if self.kind == "cnn":
            return SmallCNN(self.filters, self.hidden[0], classes, seed)
        return MLP([features, *self.hidden, classes], seed)

    def module(self, features: int, classes: int, seed: int):  # noqa: ANN201 - torch.nn.Module
        """The torch module of a torch kind, initialised from `seed` (the global torch RNG is
        left as it was); torch runs one thread per process (agents share few cores)."""
        import torch

        from hosts.training import sequences, torch_nets
        if not self.torch:
            raise ConfigError(f"--model {self.kind} is not a PyTorch model")
        torch.set_num_threads(1)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            if self.kind == "torch-mlp":
                return torch_nets.TorchMLP(features, self.hidden, classes)
            if self.kind == "torch-cnn":
                return torch_nets.TorchCNN(self.filters, self.hidden[0], classes)
            if self.kind == "resnet":
                return torch_nets.SmallResNet(self.filters, classes)
            if features != sequences.LENGTH:
                raise ConfigError(f"--model transformer needs sequences of {sequences.LENGTH} "
                                  f"tokens, the data has {features} features")
            return torch_nets.SmallTransformer(sequences.VOCAB, sequences.LENGTH, classes)

    def layer_names(self) -> list[str]:
        """Torch kinds: the parameters' names (the transport layers'); NumPy kinds: `layerN`."""
        if not self.torch:
            return [f"layer{i}" for i in range(self.num_layers)]
        features = sequences_length() if self.kind == "transformer" else SmallCNN.INPUTS
        module = self.module(features, dataset.CLASSES, 0)
        return [name for name, p in module.named_parameters() if p.requires_grad]

    def describe(self) -> dict:
        """A JSON-able record (logged at start, kept with profiles); torch kinds name their
        layers (the parameters)."""
        out: dict = {"kind": self.kind, "hidden": list(self.hidden)}
        if self.kind in ("cnn", "torch-cnn", "resnet"):
            out["filters"] = self.filters
        if self.torch:
            out["layer_names"] = self.layer_names()
        return out


def sequences_length() -> int:
    """Tokens per sample of the transformer's generated task."""
    from hosts.training import sequences
    return sequences.LENGTH


def parse_hidden(text: str) -> tuple[int, ...]:
    """'128,64' -> (128, 64); ConfigError on anything else."""
    try:
        return tuple(int(h) for h in text.split(",") if h.strip())
    except ValueError:
        raise ConfigError(f"--hidden {text!r} is not a comma-separated list of widths") from None
