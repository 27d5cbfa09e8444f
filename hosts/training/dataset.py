"""scikit-learn's bundled 8x8 digits (installed with the package, no download), split and sharded."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hosts.errors import ConfigError

TEST_FRACTION = 0.2
FEATURES = 64       # 8x8 pixels: the shape `load` gives, known without loading
CLASSES = 10


@dataclass(frozen=True)
class Dataset:
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray

    @property
    def num_features(self) -> int:
        return self.x_train.shape[1]

    @property
    def num_classes(self) -> int:
        return int(max(self.y_train.max(), self.y_test.max())) + 1


def preload() -> None:
    """Import what `load` needs (scikit-learn, about a second) ahead of time."""
    import sklearn.datasets  # noqa: F401


def load(seed: int) -> Dataset:
    """Digits scaled to [0, 1], shuffled with `seed`, 80% train / 20% test."""
    from sklearn.datasets import load_digits  # heavy import, only where needed

    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(y))
    x, y = x[order], y[order]
    n_test = int(len(y) * TEST_FRACTION)
    return Dataset(x[n_test:], y[n_test:], x[:n_test], y[:n_test])


def shard(data: Dataset, rank: int, workers: int) -> tuple[np.ndarray, np.ndarray]:
    """Worker `rank`'s disjoint share of the training set (every `workers`-th sample)."""
    if not 0 <= rank < workers:
        raise ConfigError(f"rank {rank} is outside 0..{workers - 1} for {workers} workers")
    return data.x_train[rank::workers], data.y_train[rank::workers]


def rounds_per_epoch(data: Dataset, workers: int, batch: int) -> int:
    """Rounds in one epoch: enough batches to cover the smallest shard once."""
    if batch <= 0:
        raise ConfigError(f"--batch {batch} must be positive")
    smallest = len(data.y_train) // workers
    return max(1, smallest // batch)


def batch_indices(shard_size: int, batch: int, round_: int, per_epoch: int, seed: int,
                  rank: int) -> np.ndarray:
    """Indices of the minibatch of `round_` in a shard: a fresh seeded permutation per epoch."""
    epoch, step = divmod(round_, per_epoch)
    order = np.random.default_rng([seed, rank, epoch]).permutation(shard_size)
    return order[step * batch:(step + 1) * batch]
