"""Model and training flags shared by the parameter server and the workers."""
from __future__ import annotations

import argparse

from hosts.errors import ConfigError


def add_model_arguments(ap: argparse.ArgumentParser) -> None:
    g = ap.add_argument_group("model")
    g.add_argument("--hidden", default="64",
                   help="comma-separated hidden layer widths (default 64: a 64-64-10 MLP)")
    g.add_argument("--batch", type=int, default=32, help="minibatch per worker per round")
    g.add_argument("--seed", type=int, default=1, help="seed of data split, init and batches")


def model_sizes(args: argparse.Namespace, features: int, classes: int) -> list[int]:
    try:
        hidden = [int(h) for h in args.hidden.split(",") if h.strip()]
    except ValueError:
        raise ConfigError(f"--hidden {args.hidden!r} is not a comma-separated list of widths") from None
    if any(h <= 0 for h in hidden):
        raise ConfigError(f"--hidden {args.hidden!r}: widths must be positive")
    return [features, *hidden, classes]
