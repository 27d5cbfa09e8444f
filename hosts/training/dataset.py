"""scikit-learn's bundled 8x8 digits (installed with the package, no download), split and sharded."""
from __future__ import annotations

import gzip
import importlib.util
from dataclasses import dataclass
from pathlib import Path

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


def digits_file() -> Path | None:
    """scikit-learn's bundled digits table (1797 rows: 64 pixels 0..16, then the label), found
    without importing scikit-learn (about 2 s of CPU per agent, most of a demo's start when 9
    agents share 2 cores); None where its layout differs."""
    spec = importlib.util.find_spec("sklearn")
    if spec is None or not spec.origin:
        return None
    path = Path(spec.origin).parent / "datasets" / "data" / "digits.csv.gz"
    return path if path.is_file() else None


def _raw_digits() -> tuple[np.ndarray, np.ndarray]:
    path = digits_file()
    if path is None:
        from sklearn.datasets import load_digits  # the slow way, where the file moved

        digits = load_digits()
        return digits.data, digits.target
    with gzip.open(path, "rt") as f:
        table = np.loadtxt(f, delimiter=",")
    return table[:, :-1], table[:, -1].astype(np.int64)


def load(seed: int) -> Dataset:
    """Digits scaled to [0, 1], shuffled with `seed`, 80% train / 20% test."""
    pixels, labels = _raw_digits()
    x = (pixels / 16.0).astype(np.float32)
    y = labels.astype(np.int64)
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
