"""The default chunk size: MTU-filling chunks, finer only for layers whose bound could not act."""
import argparse

import numpy as np
import pytest

from hosts.errors import ConfigError
from hosts.exchange.config import add_transport_arguments, config_from_args, fingerprint, with_chunk_plan
from hosts.transport.bounds import LossBudget, sub_chunk_notes
from hosts.transport.chunk_size import MIN_CHUNK_ELEMS, MTU_CHUNK_ELEMS, default_chunk_sizes
from hosts.transport.chunking import ChunkPlan
from hosts.transport.reassembly import TensorBuffer

MLP = [4160, 650]     # the default 64-64-10 MLP's layers (weights and biases)


def _config(*flags: str, layers: int = len(MLP)):
    ap = argparse.ArgumentParser()
    add_transport_arguments(ap)
    return config_from_args(ap.parse_args(list(flags)), layers, seed=1)


def test_a_data_packet_fills_the_mtu():
    assert MTU_CHUNK_ELEMS == 360
    assert 20 + 8 + 32 + 4 * MTU_CHUNK_ELEMS == 1500
    assert 4 * MIN_CHUNK_ELEMS >= 20 + 8 + 32


def test_default_flags_cut_the_mlp_into_mtu_chunks():
    config, plan = with_chunk_plan(_config(), MLP)
    assert config.chunk_auto and plan.uniform and plan.chunk_elems == 360
    assert plan.chunk_counts == [12, 2]
    assert "fills the MTU" in config.summary()["chunking"]
    # the pooled push bound (10 % of 4810 = 481 elements) covers one 360-element chunk
    assert LossBudget.of(config.bounds.push, plan, "tensor").total == 1


def test_a_pull_bound_under_one_chunk_runs_reliable_without_a_deadline():
    # 2.5 % of the MLP's 4810 values is 120, under one 360-value chunk: nothing may go missing,
    # so no deadline may close the pull (each such close was a bound violation)
    config, plan = with_chunk_plan(_config(), MLP)
    assert config.pull_budget_chunks == 0 and config.pull_deadline.initial == float("inf")
    assert config.pull_kind().endswith("runs reliable (no pull deadline)")
    assert config.push_deadline.initial != float("inf")
    # with 64-value chunks the same bound covers one chunk: a bounded pull with its deadline
    config, plan = with_chunk_plan(_config("--chunk-elems", "64"), MLP)
    assert config.pull_budget_chunks == 1 and config.pull_deadline.initial != float("inf")


def test_an_explicit_size_is_kept_and_named():
    config, plan = with_chunk_plan(_config("--chunk-elems", "64"), MLP)
    assert not config.chunk_auto and plan.layer_chunk_elems == [64] * 2
    assert config.summary()["chunking"] == "64 float32 per DATA packet (--chunk-elems)"
    with pytest.raises(ConfigError, match="--chunk-elems"):
        _config("--chunk-elems", "361")


def test_packet_mac_leaves_room_for_its_tag():
    config = _config("--packet-mac")
    assert config.chunk_elems == 356


def test_layer_scope_cuts_only_the_layers_whose_bound_covers_less_than_a_chunk():
    layers = [4096, 64, 640, 10]
    sizes = default_chunk_sizes(layers, (0.1, 0.1, 0.1, 0.1), "layer")
    # 409 >= 360: MTU; 6 < 15: nothing useful, MTU (reliable); 64 < 360: 64; 1: MTU
    assert sizes.per_layer == (360, 360, 64, 360)
    assert len(sizes.reasons) == 1 and "layer 2: 64" in sizes.reasons[0]
    plan = ChunkPlan(layers, list(sizes.per_layer))
    assert plan.chunk_counts == [12, 1, 10, 1]
    assert LossBudget.of((0.1,) * 4, plan, "layer").per_layer == (1, 0, 1, 0)


def test_tensor_scope_cuts_open_layers_when_the_pooled_bound_is_under_a_chunk():
    layers = [4096, 64, 640, 10]
    sizes = default_chunk_sizes(layers, (0.05, 0.05, 0.05, 0.0), "tensor")
    pooled = int(0.05 * (4096 + 64 + 640))
    assert pooled == 240
    assert sizes.per_layer == (240, 360, 240, 360)   # layer 1 (64) and the critical layer stay
    assert default_chunk_sizes(layers, (0.1,) * 4, "tensor").per_layer == (360,) * 4
    # bounds of 0 everywhere: nothing to act, nothing cut
    assert default_chunk_sizes(layers, (0.0,) * 4, "tensor").per_layer == (360,) * 4


def test_a_plan_with_per_layer_sizes_reassembles_and_differs_in_the_fingerprint():
    plan = ChunkPlan([100, 37], [10, 16])
    assert plan.chunk_counts == [10, 3] and plan.chunk_elems == 16 and not plan.uniform
    assert plan.offset(1, 2) == 32 and plan.length(1, 2) == 5
    rng = np.random.default_rng(0)
    layers = [rng.normal(size=n).astype(np.float32) for n in plan.layer_sizes]
    buf = TensorBuffer(plan)
    for c in plan.split(layers):
        assert buf.place(c.layer, c.seq, c.offset, c.values.astype(">f4").tobytes())
    assert buf.complete() and all(np.array_equal(a, b) for a, b in zip(buf.values, layers))
    config = _config(layers=2)
    assert (fingerprint(plan.layer_sizes, plan.chunking_key(), config)
            != fingerprint(plan.layer_sizes, 16, config))
    assert ChunkPlan([100, 37], 16).chunking_key() == 16
    with pytest.raises(ConfigError):
        ChunkPlan([100, 37], [10])
    assert sub_chunk_notes(_config(layers=2).bounds, plan) == [
        "pull tensor: bound 2.5% < 1 chunk: reliable"]
