"""Per-layer bounds (PLOT), tighter pull (DLCP), phase schedule (DBLP), bubble filling (LTP)."""
import numpy as np
import pytest

from hosts.errors import ConfigError
from hosts.training.aggregate import mean_of_delivered
from hosts.transport.bounds import LayerBounds, parse_bound_list
from hosts.transport.holes import HoleFill, fill_holes
from hosts.transport.phase import PhaseSchedule


def test_layer_bounds_and_pull_default_is_tighter():
    b = LayerBounds.build(2, 0.1, [0.011, 0.004])
    assert b.push == (0.011, 0.004)
    assert all(p < q for p, q in zip(b.pull, b.push))
    assert b.required_fraction(pull=False) == (pytest.approx(0.989), pytest.approx(0.996))
    assert LayerBounds.build(3, 0.1).push == (0.1, 0.1, 0.1)
    assert LayerBounds.build(2, 0.1, pull_bound=0.01).pull == (0.01, 0.01)
    assert LayerBounds.fixed(2, 0.05).pull == (0.05, 0.05)
    zero = LayerBounds.build(2, 0.1, [0.0, 0.1], pull_bound=0.0)
    assert zero.critical_layers(pull=False) == {0}
    assert zero.critical_layers(pull=True) == {0, 1}


@pytest.mark.parametrize("call", [
    lambda: LayerBounds.build(2, 1.5),
    lambda: LayerBounds.build(2, 0.1, [0.1]),
    lambda: LayerBounds.build(2, 0.1, [0.1, -0.1]),
    lambda: LayerBounds.build(2, 0.1, pull_bound=0.2),
    lambda: parse_bound_list("0.1,abc", "--layer-bounds"),
    lambda: parse_bound_list("", "--layer-bounds"),
])
def test_bad_bounds_are_config_errors(call):
    with pytest.raises(ConfigError):
        call()


def test_phase_starts_low_goes_high_when_stable_and_back_low_on_norm_jump():
    low = (0.01, 0.005)
    ph = PhaseSchedule(high_delta=0.4, critical_change=0.5)
    assert ph.bounds(low) == low                      # start: P_low
    for _ in range(5):
        ph.observe(1.0)
    assert ph.epoch_start() is False                  # first check has no reference: stay low
    for _ in range(5):
        ph.observe(1.2)                               # +20%: not critical
    assert ph.epoch_start() is True
    assert ph.bounds(low) == pytest.approx((0.41, 0.405))
    for _ in range(5):
        ph.observe(2.0)                               # +67%: critical regime
    assert ph.epoch_start() is False
    assert ph.bounds(low) == low
    with pytest.raises(ConfigError):
        PhaseSchedule(high_delta=1.5)


def test_fill_holes_zeros_and_previous():
    vals = np.array([1, 2, 3, 4], dtype=np.float32)
    got = np.array([True, False, True, False])
    prev = np.array([9, 8, 7, 6], dtype=np.float32)
    assert fill_holes(vals, got, HoleFill.ZEROS, prev).tolist() == [1, 0, 3, 0]
    assert fill_holes(vals, got, HoleFill.PREVIOUS, prev).tolist() == [1, 8, 3, 6]
    assert fill_holes(vals, got, HoleFill.PREVIOUS, None).tolist() == [1, 0, 3, 0]
    with pytest.raises(ConfigError):
        HoleFill.parse("random")


def test_mean_over_delivered_values():
    w0 = [np.array([1.0, 1.0, 1.0], dtype=np.float32)]
    w1 = [np.array([3.0, 3.0, 3.0], dtype=np.float32)]
    m0 = [np.array([True, True, False])]
    m1 = [np.array([True, False, False])]
    prev = [np.array([5.0, 5.0, 5.0], dtype=np.float32)]
    assert mean_of_delivered([w0, w1], [m0, m1], HoleFill.ZEROS, prev)[0].tolist() == [2, 1, 0]
    assert mean_of_delivered([w0, w1], [m0, m1], HoleFill.PREVIOUS, prev)[0].tolist() == [2, 1, 5]
