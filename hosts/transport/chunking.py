"""Split per-layer tensors into fixed-size chunks that carry their layer, offset and magnitude class.

`ChunkPlan.split` is the reference for the classes; `ChunkPlan.classes(..., native=True)` takes
them from the native extension (native/mag_classes.cpp: numpy's float32 means in numpy's
order, so the same class for every input; tests/unit/hosts/test_native_setup.py), and
`send_order(..., native=True)` the 'interleave' order (native/send_order.cpp, the same order).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from hosts.errors import ConfigError
from hosts.wire import MAX_DATA_PAYLOAD

try:
    from hosts.transport import _native
except ImportError:   # not built: the reference only (hosts/transport/core.py says so)
    _native = None

NUM_MAG_CLASSES = 8
# Class of a chunk whose mean |value| equals its layer's mean |value|; each class step is x2.
_MAG_CLASS_MID = 4


@dataclass(frozen=True, slots=True)
class Chunk:
    """One chunk of one layer: elements [offset, offset + len(values)) of that layer."""

    layer: int
    seq: int
    offset: int
    values: np.ndarray  # float32
    mag_class: int


class ChunkPlan:
    """How every layer of a tensor set is cut into chunks; identical on sender and receiver.

    `chunk_elems`: one size for every layer, or one per layer (hosts/transport/chunk_size.py
    picks them by default). `chunk_elems` the attribute is the largest of them."""

    def __init__(self, layer_sizes: list[int], chunk_elems: int | Sequence[int]) -> None:
        if not layer_sizes or any(n <= 0 for n in layer_sizes):
            raise ConfigError(f"layer sizes must be positive, got {layer_sizes}")
        per_layer = ([int(chunk_elems)] * len(layer_sizes) if isinstance(chunk_elems, (int, np.integer))
                     else [int(c) for c in chunk_elems])
        if len(per_layer) != len(layer_sizes):
            raise ConfigError(f"{len(per_layer)} chunk sizes for {len(layer_sizes)} layers")
        for size in per_layer:
            if not 1 <= size <= MAX_DATA_PAYLOAD // 4:
                raise ConfigError(f"chunk size {size} elements is outside 1..{MAX_DATA_PAYLOAD // 4}")
        self.layer_sizes = list(layer_sizes)
        self.layer_chunk_elems = per_layer
        self.chunk_elems = max(per_layer)
        self.chunk_counts = [-(-n // c) for n, c in zip(layer_sizes, per_layer)]

    @property
    def uniform(self) -> bool:
        """Every layer is cut into chunks of the same size."""
        return len(set(self.layer_chunk_elems)) == 1

    def chunking_key(self) -> int | list[int]:
        """What PS and workers must agree on about the cut: the size, or the per-layer sizes."""
        return self.chunk_elems if self.uniform else list(self.layer_chunk_elems)

    @property
    def num_layers(self) -> int:
        return len(self.layer_sizes)

    @property
    def total_chunks(self) -> int:
        return sum(self.chunk_counts)

    def offset(self, layer: int, seq: int) -> int:
        return seq * self.layer_chunk_elems[layer]

    def length(self, layer: int, seq: int) -> int:
        size = self.layer_chunk_elems[layer]
        return min(size, self.layer_sizes[layer] - seq * size)

    def check(self, layers: list[np.ndarray]) -> None:
        """ConfigError unless `layers` matches this plan's layer sizes."""
        sizes = [int(np.size(a)) for a in layers]
        if sizes != self.layer_sizes:
            raise ConfigError(f"tensor layer sizes {sizes} differ from the plan {self.layer_sizes}")

    def flats(self, layers: list[np.ndarray]) -> list[np.ndarray]:
        """`layers` as flat C-contiguous float32 arrays (no copy where they are already);
        ConfigError unless they match the plan."""
        self.check(layers)
        return [np.ascontiguousarray(a, dtype=np.float32).ravel() for a in layers]

    def classes(self, layers: list[np.ndarray], native: bool = False) -> bytes:
        """Every chunk's magnitude class, one byte per chunk in `split`'s order: natively when
        `native` and the extension was built, else from `split` (the same classes either way)."""
        if native and _native is not None:
            return _native.mag_classes(self.flats(layers), self.layer_chunk_elems)
        return bytes(c.mag_class for c in self.split(layers))

    def split(self, layers: list[np.ndarray]) -> list[Chunk]:
        """Every chunk of `layers` (layer order, then offset) with its magnitude class."""
        self.check(layers)
        chunks = []
        for layer, arr in enumerate(layers):
            size = self.layer_chunk_elems[layer]
            flat = np.ascontiguousarray(arr, dtype=np.float32).ravel()
            magnitude = np.abs(flat)
            layer_mean = float(np.mean(magnitude))
            for seq, mean in enumerate(_chunk_means(magnitude, size)):
                off = seq * size
                chunks.append(Chunk(layer, seq, off, flat[off:off + size], _class_of_mean(mean, layer_mean)))
        return chunks


def _chunk_means(magnitude: np.ndarray, size: int) -> list[float]:
    """The mean of every `size`-element chunk of `magnitude` (the last may be shorter), the
    full chunks in one reduction: the same float32 sums as np.mean of each chunk alone
    (tests/unit/hosts/test_chunking.py checks it)."""
    full = len(magnitude) // size
    means = magnitude[:full * size].reshape(full, size).mean(axis=1).tolist()
    if full * size < len(magnitude):
        means.append(float(np.mean(magnitude[full * size:])))
    return means


ORDERS = ("interleave", "shuffle", "layer")


def send_order(plan: ChunkPlan, order: str, seed: int | list[int] = 0, native: bool = False) -> list[int]:
    """Indices into `plan.split(...)` in the order a sender first sends them.

    interleave: every layer spread evenly over the pass (chunk k of a layer of c chunks goes at
    about (k + 1/2) / c of it), so the pass's tail holds chunks of every layer;
    shuffle: a random permutation seeded by `seed`; layer: layer 0 first, in offset order.
    `native`: 'interleave' sorted by the extension (native/send_order.cpp), where it was built;
    the same order.
    """
    total = plan.total_chunks
    if order == "layer":
        return list(range(total))
    if order == "shuffle":
        indices = list(range(total))
        np.random.default_rng(seed).shuffle(indices)
        return indices
    if order != "interleave":
        raise ConfigError(f"--order {order!r} is not one of {', '.join(ORDERS)}")
    if native and _native is not None:
        return _native.interleave(plan.chunk_counts)
    keys = []
    base = 0
    for layer, count in enumerate(plan.chunk_counts):
        keys.extend(((seq + 0.5) / count, layer, base + seq) for seq in range(count))
        base += count
    return [idx for _, _, idx in sorted(keys)]


def magnitude_class(values: np.ndarray, layer_mean_abs: float) -> int:
    """0..7 from the chunk's mean |value| relative to its layer's: class 4 = the layer mean,
    one class per factor of two (larger = more important)."""
    return _class_of_mean(float(np.mean(np.abs(values))) if len(values) else 0.0, layer_mean_abs)


def _class_of_mean(mean: float, layer_mean_abs: float) -> int:
    if mean <= 0.0 or not np.isfinite(mean):
        return 0
    if layer_mean_abs <= 0.0 or not np.isfinite(layer_mean_abs):
        return _MAG_CLASS_MID
    cls = int(np.floor(np.log2(mean / layer_mean_abs))) + _MAG_CLASS_MID
    return min(max(cls, 0), NUM_MAG_CLASSES - 1)
