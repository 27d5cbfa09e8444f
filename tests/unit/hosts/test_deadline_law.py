"""The Early Close control law with telemetry (docs/control-laws.md): widen with the path's
queueing delay, shrink when every queue is empty, bounded, rate-limited, reported."""
import pytest

from hosts.transport.deadline import (Deadline, DeadlineSettings, EMPTY_QDEPTH, HEADROOM,
                                      RoundTelemetry)


def _law(**kw) -> Deadline:
    settings = dict(mode="telemetry", initial=0.5, floor=0.2, ceiling=2.0, multiple=3.0)
    settings.update(kw)
    return Deadline(DeadlineSettings(**settings))


def _tele(qdepth: int, qdelay_ms: float, hops: int = 2) -> RoundTelemetry:
    t = RoundTelemetry()
    t.add(qdepth, int(qdelay_ms * 1000), hops)
    return t


def test_without_telemetry_it_is_the_adaptive_formula():
    law, plain = _law(), Deadline(DeadlineSettings("adaptive", initial=0.5, floor=0.2,
                                                   ceiling=2.0, multiple=3.0))
    for sample in (0.12, 0.1, 0.3, 0.2, 0.15):
        law.observe(sample, RoundTelemetry())          # no packet stamped by a switch
        plain.observe(sample)
        assert law.current() == pytest.approx(plain.current())


def test_queueing_delay_widens_the_deadline_and_says_why():
    law = _law()
    law.observe(0.1, _tele(2, 0), round_=0)
    base = law.current()
    assert base == pytest.approx(0.3)
    adaptation = law.observe(0.1, _tele(40, 200), round_=1)
    # Q = 200 ms / 4 (gain 1/4): D = 3 x 0.1 + 2 x 0.05
    assert law.current() == pytest.approx(0.3 + HEADROOM * 0.05)
    assert adaptation is not None and adaptation.reason == "queueing delay"
    assert adaptation.round == 2 and adaptation.value == law.current()
    assert adaptation.as_dict()["deadline_ms"] == pytest.approx(400.0)


def test_empty_queues_shrink_the_multiple():
    law = _law(floor=0.05)
    law.observe(0.1, _tele(30, 0), round_=0)
    assert law.current() == pytest.approx(0.3)
    adaptation = law.observe(0.1, _tele(EMPTY_QDEPTH, 0), round_=1)
    assert law.current() == pytest.approx(0.2)         # 2 x S instead of 3 x S
    assert adaptation is not None and adaptation.reason == "queues empty"


def test_bounds_and_rate_limit_hold():
    law = _law()
    law.observe(0.05, _tele(0, 0))
    assert law.current() == 0.25                       # 2 x 0.05 = 0.1, floor 0.2, but at most /2
    for _ in range(10):
        law.observe(0.01, _tele(0, 0))
    assert law.current() == 0.2                        # floor
    previous = law.current()
    law.observe(5.0, _tele(60, 5000))
    assert law.current() <= 2 * previous               # at most doubled per round
    for _ in range(30):
        adaptation = law.observe(5.0, _tele(60, 5000))
    assert law.current() == 2.0                        # ceiling
    assert law.last_adaptation is not None and law.last_adaptation.reason == "ceiling"
    assert adaptation is None                          # no change: nothing reported


def test_small_changes_are_not_reported_and_fixed_never_moves():
    law = _law()
    law.observe(0.1, _tele(5, 1))
    assert law.observe(0.101, _tele(5, 1)) is None
    fixed = Deadline(DeadlineSettings("fixed", initial=0.5))
    assert fixed.observe(0.01, _tele(60, 900)) is None and fixed.current() == 0.5


def test_telemetry_keeps_the_largest_values_of_the_round():
    t = RoundTelemetry()
    t.add(3, 100, 1)
    t.add(1, 900, 2)
    assert t.as_dict() == {"packets": 2, "max_qdepth": 3, "max_qdelay_us": 900, "hops": 2}


def test_the_policy_switches_the_law_and_a_switch_keeps_the_smoothed_time():
    import argparse

    from hosts.exchange.config import add_transport_arguments, config_from_args, following
    from hosts.policy_client import HostPolicy
    from hosts.transport.bounds import LayerBounds
    from hosts.transport.holes import HoleFill

    ap = argparse.ArgumentParser()
    add_transport_arguments(ap)
    config = config_from_args(ap.parse_args([]), 2, seed=1)
    assert config.push_deadline.mode == "telemetry"
    view = HostPolicy(1, 1, LayerBounds((0.1, 0.1), (0.05, 0.05)), (frozenset(),) * 2, None,
                      "normal", "policy", early_close="fixed")
    followed = following(config, view, HoleFill.MEAN_DELIVERED)
    assert followed.push_deadline.mode == followed.pull_deadline.mode == "fixed"
    assert followed.push_deadline.initial == config.push_deadline.initial
    no_law = HostPolicy(1, 1, view.bounds, view.droppable, None, "normal", "policy")
    assert following(config, no_law, HoleFill.MEAN_DELIVERED).push_deadline.mode == "telemetry"
    law = _law()
    law.settings = DeadlineSettings("adaptive", initial=0.5, floor=0.2, ceiling=2.0, multiple=3.0)
    law.observe(0.2)
    assert law.current() == pytest.approx(0.6)
    law.settings = DeadlineSettings("telemetry", initial=0.5, floor=0.2, ceiling=2.0, multiple=3.0)
    assert law.current() == pytest.approx(0.6)            # no jump back to the start value


def test_the_first_telemetry_sets_the_queueing_delay():
    """Measured in the two-jobs topology run: round 0 saw 112 ms of queueing, yet Q started at
    0 and round 1's deadline fell to 250 ms with 254 ms of queueing (a 31 % deadline close)."""
    law = _law()
    law.observe(0.08, _tele(60, 112))
    assert law.queue_delay == pytest.approx(0.112)
    assert law.current() == pytest.approx(3 * 0.08 + HEADROOM * 0.112)
