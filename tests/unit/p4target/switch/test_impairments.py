"""Impairment spec parsing and per-frame drop/delay decisions."""
from __future__ import annotations

import random

import pytest

from p4target.switch.errors import OptionError
from p4target.switch.impairments import Impairment, LossBurst, parse_impairment


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
