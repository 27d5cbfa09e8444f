"""Issue 22: one bound over the tensor (LTP, MLT, DBLP) or one per layer (PLOT), bounds below
one chunk reported, first-pass orders that put every layer in the tail, the STOP's reason."""
import argparse

import numpy as np
import pytest

from hosts import wire
from hosts.errors import ConfigError
from hosts.exchange.config import add_transport_arguments, config_from_args
from hosts.transport.bounds import LayerBounds, LossBudget, sub_chunk_notes, violated_layers
from hosts.transport.chunking import ChunkPlan, send_order
from hosts.transport.reassembly import TensorBuffer

PLAN = ChunkPlan([4160, 650], 64)     # 65 + 11 chunks, the bundled MLP's shape


def _deliver(buf, plan, missing):
    for layer, count in enumerate(plan.chunk_counts):
        for seq in range(count):
            if (layer, seq) not in missing:
                n = plan.length(layer, seq)
                buf.place(layer, seq, plan.offset(layer, seq), np.ones(n, ">f4").tobytes())


def test_tensor_scope_pools_the_budget_so_any_layer_may_hold_the_holes():
    # 7 chunks of the last layer missing: 448 of 4810 elements (9.3 %), 69 % of that layer
    missing = {(1, s) for s in range(7)}
    buf = TensorBuffer(PLAN)
    _deliver(buf, PLAN, missing)
    required = LayerBounds.fixed(2, 0.1, "tensor").required_fraction(pull=False)
    assert buf.meets(required, "tensor")
    assert not buf.meets(required, "layer")
    # one more chunk and the pooled budget is exceeded
    buf = TensorBuffer(PLAN)
    _deliver(buf, PLAN, missing | {(0, 3)})
    assert not buf.meets(required, "tensor")


def test_tensor_scope_keeps_bound_zero_layers_whole():
    buf = TensorBuffer(PLAN)
    _deliver(buf, PLAN, {(1, 0)})
    assert not buf.meets((0.5, 1.0), "tensor")      # layer 1 is critical: its chunk is missing
    buf = TensorBuffer(PLAN)
    _deliver(buf, PLAN, {(0, 0)})
    assert buf.meets((0.5, 1.0), "tensor")


def test_violations_in_tensor_scope_count_only_a_pooled_shortfall():
    sizes = PLAN.layer_sizes
    assert violated_layers([1.0, 0.3], (0.1, 0.1), "tensor", sizes) == []
    assert violated_layers([1.0, 0.3], (0.1, 0.1), "layer", sizes) == [1]
    assert violated_layers([0.5, 0.3], (0.1, 0.1), "tensor", sizes) == [0, 1]
    assert violated_layers([0.95, 0.99], (0.1, 0.0), "tensor", sizes) == [1]


def test_bounds_below_one_chunk_are_reported_as_reliable():
    notes = sub_chunk_notes(LayerBounds.build(2, 0.1, [0.011, 0.004], pull_bound=0.002,
                                              scope="layer"), PLAN)
    # 0.4 % of 650 = 2.6 elements < the 10-element last chunk; 1.1 % of 4160 = 45.8 < 64
    assert "push layer 0: bound 1.1% < 1 chunk: reliable" in notes
    assert "push layer 1: bound 0.4% < 1 chunk: reliable" in notes
    assert sub_chunk_notes(LayerBounds.build(2, 0.1, scope="layer"), PLAN) == []
    # pooled, the same per-layer bounds still let no chunk go (45.8 + 2.6 < 10? no: 48 >= 10)
    pooled = LayerBounds.build(2, 0.1, [0.011, 0.004], pull_bound=0.002, scope="tensor")
    assert not [n for n in sub_chunk_notes(pooled, PLAN) if n.startswith("push")]
    tiny = LayerBounds.fixed(2, 0.001, "tensor")     # 4.8 elements < the 10-element chunk
    assert sub_chunk_notes(tiny, PLAN)[0] == "push tensor: bound 0.1% < 1 chunk: reliable"


def test_loss_budget_in_whole_chunks_per_scope():
    tensor = LossBudget.of((0.1, 0.1), PLAN, "tensor")
    assert tensor.total == 481 // 64 == 7
    assert tensor.covers([0, 7]) and not tensor.covers([1, 7])     # holes anywhere, 7 in all
    layer = LossBudget.of((0.1, 0.1), PLAN, "layer")
    assert layer.per_layer == (416 // 64, 65 // 64) == (6, 1)
    assert layer.covers([6, 1]) and not layer.covers([0, 2])
    critical = LossBudget.of((0.1, 0.0), PLAN, "tensor")
    assert critical.covers([6, 0]) and not critical.covers([0, 1])  # a bound-0 layer stays whole
    assert not LossBudget.none(PLAN).covers([1, 0]) and LossBudget.none(PLAN).covers([0, 0])


def test_scope_is_checked():
    with pytest.raises(ConfigError):
        LayerBounds((0.1,), (0.1,), "global")
    b = LayerBounds.build(2, 0.1, scope="tensor")
    assert b.with_reliable_pull().scope == "tensor" and b.with_scope("layer").scope == "layer"


def test_interleaved_order_spreads_every_layer_over_the_pass():
    order = send_order(PLAN, "interleave")
    assert sorted(order) == list(range(PLAN.total_chunks))
    tail = order[-8:]                                 # the last ~10 % sent
    assert any(i < 65 for i in tail) and any(i >= 65 for i in tail)
    positions = [order.index(65 + s) for s in range(11)]   # layer 1's chunks
    assert positions == sorted(positions) and positions[0] < 8 and positions[-1] > 66
    assert send_order(PLAN, "layer") == list(range(PLAN.total_chunks))


def test_shuffled_order_is_seeded():
    a = send_order(PLAN, "shuffle", [1, 9, 3, 0])
    assert a == send_order(PLAN, "shuffle", [1, 9, 3, 0])
    assert a != send_order(PLAN, "shuffle", [1, 9, 4, 0])
    assert sorted(a) == list(range(PLAN.total_chunks))
    with pytest.raises(ConfigError):
        send_order(PLAN, "random")


def test_ack_entries_echo_ce_and_stop_names_its_reason():
    payload = wire.pack_ack_entries([(0, 1), (1, 7)], [False, True])
    assert wire.unpack_ack_marks(payload) == [(0, 1, False), (1, 7, True)]
    assert wire.unpack_ack_entries(payload) == [(0, 1), (1, 7)]
    assert {wire.STOP_REASON_NAMES[wire.STOP_REASONS[r]] for r in ("bound", "complete", "deadline")} \
        == {"bound", "complete", "deadline"}


def _config(*argv, layers=2):
    ap = argparse.ArgumentParser()
    add_transport_arguments(ap)
    return config_from_args(ap.parse_args(list(argv)), layers, seed=1)


def test_agent_flags_pick_the_scope_order_and_reaction_and_mlt_takes_them_too():
    cfg = _config()
    assert (cfg.bounds.scope, cfg.send.order, cfg.send.cc) == ("tensor", "interleave", "ecn")
    assert _config("--layer-bounds", "0.1,0.05").bounds.scope == "layer"
    mlt = _config("--transport", "mlt", "--bound", "0.1", "--bound-scope", "layer",
                  "--order", "shuffle", "--cc", "reno")
    assert (mlt.bounds.scope, mlt.send.order, mlt.send.cc) == ("layer", "shuffle", "reno")
    summary = mlt.summary()
    assert (summary["bound_scope"], summary["order"], summary["cc"]) == ("layer", "shuffle", "reno")
    with pytest.raises(ConfigError, match="--bound-scope layer"):
        _config("--layer-bounds", "0.1,0.05", "--bound-scope", "tensor")
    with pytest.raises(ConfigError, match="--cc-delay-ms"):
        _config("--cc-delay-ms", "0")
    assert _config().send.mark_depth == 40 and _config("--cc-mark-depth", "16").send.mark_depth == 16
    with pytest.raises(ConfigError, match="--cc-mark-depth"):
        _config("--cc-mark-depth", "-1")
