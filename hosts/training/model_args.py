"""Model and training flags shared by the parameter server and the workers."""
from __future__ import annotations

import argparse

from hosts.training.models import MODEL_KINDS, TORCH_KINDS, ModelSpec, parse_hidden


def add_model_arguments(ap: argparse.ArgumentParser) -> None:
    g = ap.add_argument_group("model")
    g.add_argument("--model", default="mlp", choices=MODEL_KINDS,
                   help="mlp (default) or cnn (3x3 convolution, 2x2 pool, one dense layer), in "
                        "NumPy; torch-mlp, torch-cnn (the same in PyTorch), resnet (a small "
                        "ResNet-style CNN), transformer (a small transformer on a generated "
                        "sequence task): PyTorch, one transport layer per parameter")
    g.add_argument("--hidden", default="64",
                   help="comma-separated hidden layer widths (default 64: a 64-64-10 MLP); "
                        "cnn, torch-cnn: the width of its one dense layer")
    g.add_argument("--filters", type=int, default=16, help="cnn, torch-cnn: convolution kernels; resnet: maps of its first "
                        "stage (default 16)")
    g.add_argument("--batch", type=int, default=32, help="minibatch per worker per round")
    g.add_argument("--seed", type=int, default=1, help="seed of data split, init and batches")


def model_spec(args: argparse.Namespace) -> ModelSpec:
    """The model the flags name (ConfigError on bad widths)."""
    return ModelSpec(args.model, parse_hidden(args.hidden), args.filters)


def preload_model(args: argparse.Namespace) -> None:
    """Import the libraries of the model the flags name that take seconds to import (PyTorch),
    as an agent's preload (hosts.cli.run_agent): before its signal handlers exist, so a
    SIGTERM during the import ends the agent instead of being lost inside the extension."""
    if args.model in TORCH_KINDS:
        import hosts.training.torch_nets  # noqa: F401, PLC0415 - imports torch
