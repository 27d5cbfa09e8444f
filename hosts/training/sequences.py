"""A generated sequence task for the transformer: name the sequence's most frequent token.

Each sample is LENGTH tokens from 0..CLASSES-1: its label's token planted PLANTED times at
random positions, the other positions drawn from the other tokens; the label is the most
frequent token (the smallest of a tie). Solving it takes
comparing tokens across positions (attention) and counting them (the feed-forward), and the
positions carry nothing. Seeded, so every agent generates the same set.
"""
from __future__ import annotations

import numpy as np

from hosts.training.dataset import TEST_FRACTION, Dataset

CLASSES = 10
VOCAB = CLASSES
LENGTH = 12
PLANTED = 3
SAMPLES = 2400


def generate(seed: int, samples: int = SAMPLES) -> Dataset:
    """`samples` sequences (int64 tokens), 80% train / 20% test, from `seed`."""
    rng = np.random.default_rng([seed, 0x5E0])
    planted = rng.integers(0, CLASSES, size=samples)
    # the other tokens: uniform over the CLASSES - 1 tokens that are not the planted one
    others = rng.integers(0, CLASSES - 1, size=(samples, LENGTH))
    x = others + (others >= planted[:, None])
    for row, order in enumerate(rng.random((samples, LENGTH)).argsort(axis=1)):
        x[row, order[:PLANTED]] = planted[row]
    counts = np.stack([(x == c).sum(axis=1) for c in range(CLASSES)], axis=1)
    y = counts.argmax(axis=1).astype(np.int64)
    n_test = int(samples * TEST_FRACTION)
    x = x.astype(np.int64)
    return Dataset(x[n_test:], y[n_test:], x[:n_test], y[:n_test])
