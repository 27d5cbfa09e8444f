"""Chunk plans, magnitude classes and reassembly in any order."""
import random

import numpy as np
import pytest

from hosts.errors import ConfigError, PacketError
from hosts.transport.chunking import ChunkPlan, magnitude_class
from hosts.transport.reassembly import TensorBuffer


def _layers(plan, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=n).astype(np.float32) for n in plan.layer_sizes]


def test_plan_counts_and_lengths():
    plan = ChunkPlan([4160, 650], 64)
    assert plan.chunk_counts == [65, 11]
    assert plan.length(1, 10) == 650 - 640
    assert plan.offset(1, 10) == 640
    with pytest.raises(ConfigError):
        ChunkPlan([10], 0)
    with pytest.raises(ConfigError):
        ChunkPlan([10], 10_000)
    with pytest.raises(ConfigError):
        plan.split([np.zeros(4160)])


def test_split_and_reassemble_out_of_order():
    plan = ChunkPlan([1000, 37, 5], 16)
    layers = _layers(plan)
    chunks = plan.split(layers)
    assert len(chunks) == plan.total_chunks
    random.Random(3).shuffle(chunks)
    buf = TensorBuffer(plan)
    for c in chunks:
        assert buf.place(c.layer, c.seq, c.offset, c.values.astype(">f4").tobytes())
    assert buf.complete()
    for got, want in zip(buf.values, layers):
        assert np.array_equal(got, want)
    # a duplicate is reported, not placed twice
    c = chunks[0]
    assert not buf.place(c.layer, c.seq, c.offset, c.values.astype(">f4").tobytes())
    assert buf.fractions() == [1.0, 1.0, 1.0]


def test_place_rejects_chunks_that_do_not_fit_and_keeps_tensor_intact():
    plan = ChunkPlan([100], 10)
    buf = TensorBuffer(plan)
    good = np.ones(10, dtype=">f4").tobytes()
    for layer, seq, off, payload, reason in [
        (1, 0, 0, good, "corrupt"),                         # unknown layer
        (0, 10, 100, good, "corrupt"),                      # chunk past the end
        (0, 1, 0, good, "corrupt"),                         # offset disagrees with seq
        (0, 1, 10, good[:-4], "corrupt"),                   # short payload
        (0, 2, 20, np.full(10, np.nan, ">f4").tobytes(), "nonfinite"),
    ]:
        with pytest.raises(PacketError) as e:
            buf.place(layer, seq, off, payload)
        assert e.value.reason == reason
    assert buf.delivered_elems == [0]
    assert not buf.values[0].any()


def test_magnitude_class_scale():
    assert magnitude_class(np.full(4, 1.0), 1.0) == 4
    assert magnitude_class(np.full(4, 2.0), 1.0) == 5
    assert magnitude_class(np.full(4, 0.5), 1.0) == 3
    assert magnitude_class(np.full(4, 1e9), 1.0) == 7
    assert magnitude_class(np.full(4, 1e-9), 1.0) == 0
    assert magnitude_class(np.zeros(4), 1.0) == 0
    plan = ChunkPlan([8], 4)
    small, large = plan.split([np.array([0.01] * 4 + [1.0] * 4, dtype=np.float32)])
    assert small.mag_class < large.mag_class


@pytest.mark.slow
def test_split_classes_every_chunk_as_magnitude_class_does():
    # split reduces all full chunks of a layer at once: the float32 means, and so the classes,
    # must be those of each chunk on its own
    rng = np.random.default_rng(7)
    layers = [rng.normal(0, 0.01, 100_003), rng.standard_cauchy(36_001), rng.lognormal(0, 3, 7_207),
              np.array([1.0, np.inf, -2.0, np.nan, 0.5] * 200)]
    layers = [a.astype(np.float32) for a in layers]
    for size in (360, 100, 7):
        plan = ChunkPlan([len(a) for a in layers], size)
        chunks = plan.split(layers)
        means = [float(np.mean(np.abs(a))) for a in layers]
        assert [c.mag_class for c in chunks] == [magnitude_class(c.values, means[c.layer]) for c in chunks]
        assert len({c.mag_class for c in chunks}) >= 6
