"""Per-layer bounds (PLOT), tighter pull (DLCP), phase schedule (DBLP), bubble filling (LTP)."""
import numpy as np
import pytest

from hosts.errors import ConfigError
from hosts.training.aggregate import PushAggregator
from hosts.transport.bounds import LayerBounds, parse_bound_list, violated_layers
from hosts.transport.holes import HoleFill, keep_previous
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


def _checks(ph, norm, rounds):
    return [ph.observe([norm, norm]) for _ in range(rounds)]


def test_phase_checks_every_k_rounds_goes_high_when_stable_and_back_low_on_norm_jump():
    low = (0.01, 0.005)
    ph = PhaseSchedule(2, high_delta=0.4, critical_change=0.5, check_every=10)
    assert ph.bounds(low) == low and ph.phase == "low"         # start: P_low
    assert _checks(ph, 1.0, 10) == [False] * 9 + [True]        # DBLP's k = 10 rounds, not epochs
    assert ph.phase == "low"                                   # first check has no reference
    _checks(ph, 1.2, 10)                                       # +20%: not critical
    assert ph.phase == "high" and ph.bounds(low) == pytest.approx((0.41, 0.405))
    _checks(ph, 1.2, 9)
    assert ph.phase == "high"                                  # no decision between checks
    ph.observe([2.0, 2.0])                                     # window mean +7%: still high
    assert ph.phase == "high"
    _checks(ph, 2.5, 10)                                       # +~100%: critical regime
    assert ph.bounds(low) == low and ph.phase == "low"
    assert PhaseSchedule(2).check_every == 10
    with pytest.raises(ConfigError):
        PhaseSchedule(2, high_delta=1.5)
    with pytest.raises(ConfigError):
        PhaseSchedule(2, check_every=0)


def test_phase_never_relaxes_a_bound_zero_layer():
    ph = PhaseSchedule(3, high_delta=0.4, check_every=1)
    ph.observe([1.0, 1.0, 1.0])
    ph.observe([1.0, 1.0, 1.0])
    assert ph.phase == "high"
    assert ph.bounds((0.0, 0.01, 0.0)) == pytest.approx((0.0, 0.41, 0.0))


def test_phase_per_layer_detection_decides_each_layer_on_its_own_norm():
    ph = PhaseSchedule(2, high_delta=0.4, check_every=2, per_layer=True)
    for a, b in ((1.0, 1.0), (1.0, 1.0), (1.1, 5.0), (1.1, 5.0)):
        ph.observe([a, b])
    assert ph.high == [True, False] and ph.phase == "mixed"   # layer 1 jumped x5: stays low
    assert ph.bounds((0.01, 0.01)) == pytest.approx((0.41, 0.01))
    whole = PhaseSchedule(2, high_delta=0.4, check_every=2)
    for a, b in ((1.0, 1.0), (1.0, 1.0), (1.1, 5.0), (1.1, 5.0)):
        whole.observe([a, b])
    assert whole.phase == "low"                                # one decision on the model norm


def test_keep_previous_fills_pull_holes_with_previous_parameters():
    vals = np.array([1, 2, 3, 4], dtype=np.float32)
    got = np.array([True, False, True, False])
    prev = np.array([9, 8, 7, 6], dtype=np.float32)
    assert keep_previous(vals, got, prev).tolist() == [1, 8, 3, 6]
    assert keep_previous(vals, got, None).tolist() == [1, 0, 3, 0]
    with pytest.raises(ConfigError, match="zero, previous, mean-delivered"):
        HoleFill.parse("zeros")


def _push(a, b, ma, mb):
    return ({0: [np.array(a, dtype=np.float32)], 1: [np.array(b, dtype=np.float32)]},
            {0: [np.array(ma)], 1: [np.array(mb)]})


def test_hole_fill_modes_aggregate_as_named():
    values, masks = _push([1.0, 1.0, 1.0], [3.0, 3.0, 3.0], [True, True, False], [True, False, False])
    # mean over the workers that delivered an element; nobody -> 0
    assert PushAggregator(HoleFill.MEAN_DELIVERED).aggregate(values, masks)[0].tolist() == [2, 1, 0]
    # DLCP: a missing contribution counts as zero in the mean over all workers
    assert PushAggregator(HoleFill.ZERO).aggregate(values, masks)[0].tolist() == [2, 0.5, 0]
    # MLT: a missing contribution is that worker's last delivered value (0 before any)
    prev = PushAggregator(HoleFill.PREVIOUS)
    assert prev.aggregate(values, masks)[0].tolist() == [2, 0.5, 0]
    values2, masks2 = _push([5.0, 5.0, 5.0], [7.0, 7.0, 7.0], [False, True, True], [False, False, True])
    # worker 0 lost element 0 -> its last value 1; worker 1 lost 0 and 1 -> its last 3 and 0
    assert prev.aggregate(values2, masks2)[0].tolist() == [2, 2.5, 6]


def test_violated_layers_compares_delivery_with_the_bound():
    assert violated_layers([0.95, 0.89, 1.0], (0.05, 0.1, 0.0)) == [1]
    assert violated_layers([0.5, 0.99], (0.0, 0.0)) == [0, 1]
    assert LayerBounds.build(2, 0.1).with_reliable_pull().pull == (0.0, 0.0)

