"""Impairment spec parsing and per-frame drop/delay decisions."""
from __future__ import annotations

import random

import pytest

from p4target.switch.errors import OptionError
from p4target.switch.links.impairments import Impairment, LossBurst, RateBurst, parse_impairment, parse_impairment_spec


def test_spec_is_parsed_with_units() -> None:
    port, imp = parse_impairment("1:delay=5ms,jitter=200us,loss=0.01,burst=2s+200ms@0.7")
    assert port == 1
    assert imp.delay == pytest.approx(0.005) and imp.jitter == pytest.approx(0.0002)
    assert imp.loss == 0.01 and imp.bursts == (LossBurst(2.0, pytest.approx(0.2), 0.7),)
    assert "burst=2s+200ms@0.7" in imp.describe()


@pytest.mark.parametrize(
    "spec, fragment",
    [("delay=5ms", "PORT:"), ("1:delay=5", "time like"), ("1:loss=1.5", "probability"),
     ("1:color=red", "unknown impairment"), ("1:burst=2s@0.5", "START\\+DURATION"), ("1:delay", "key=value")],
)
def test_bad_specs_raise(spec: str, fragment: str) -> None:
    with pytest.raises(OptionError, match=fragment):
        parse_impairment(spec)


def test_burst_drops_only_inside_its_window() -> None:
    imp = Impairment(bursts=(LossBurst(2.0, 0.2, 0.7),))
    rng = random.Random(7)
    outside = [imp.decide(1.0, rng) for _ in range(2000)]
    inside = [imp.decide(2.1, rng) for _ in range(2000)]
    assert all(d == 0.0 for d in outside)
    dropped = sum(d is None for d in inside) / len(inside)
    assert 0.65 < dropped < 0.75


def test_delay_and_jitter_bound_the_hold_time() -> None:
    imp = Impairment(delay=0.005, jitter=0.001)
    rng = random.Random(1)
    holds = [imp.decide(0.0, rng) for _ in range(1000)]
    assert all(h is not None and 0.004 <= h <= 0.006 for h in holds)
    assert max(holds) - min(holds) > 0.0015


def test_rate_bursts_are_parsed_and_described() -> None:
    port, imp = parse_impairment("3:loss=0.1,rateburst=2s+200ms@100,rateburst=5s+1s@20.5")
    assert port == 3 and imp.loss == 0.1
    assert imp.rate_bursts == (RateBurst(2.0, pytest.approx(0.2), 100.0), RateBurst(5.0, 1.0, 20.5))
    assert "rateburst=2s+200ms@100" in imp.describe() and "rateburst=5s+1000ms@20.5" in imp.describe()
    # a rate burst never drops or holds frames itself: the traffic manager's shaper does the work
    rng = random.Random(3)
    assert all(Impairment(rate_bursts=imp.rate_bursts).decide(2.1, rng) == 0.0 for _ in range(100))


def test_describe_round_trips_through_the_parser() -> None:
    imp = parse_impairment_spec("delay=5ms,jitter=1ms,loss=0.25,burst=1s+50ms@1,rateburst=2s+200ms@100")
    assert imp is not None and parse_impairment_spec(imp.describe()) == imp


def test_off_clears_but_only_as_a_whole_spec() -> None:
    assert parse_impairment_spec("off") is None
    with pytest.raises(OptionError, match="PORT:key=value"):
        parse_impairment("1:off")
    with pytest.raises(OptionError, match="empty impairment spec"):
        parse_impairment_spec("")


@pytest.mark.parametrize(
    "spec, fragment",
    [("rateburst=2s+200ms@0", "packets/s > 0"), ("rateburst=2s+200ms@fast", "packets/s > 0"),
     ("rateburst=2s@100", "START\\+DURATION@PPS"), ("rateburst=2+200ms@100", "rateburst start"),
     ("loss=0.1,rateburst=1s+1x@5", "rateburst duration")],
)
def test_bad_rate_bursts_raise(spec: str, fragment: str) -> None:
    with pytest.raises(OptionError, match=fragment):
        parse_impairment_spec(spec)
