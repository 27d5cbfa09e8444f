"""The host relay's loss model: steady loss, scheduled bursts in the switch's syntax
(`START+DURATION@LOSS`), and the host parser agreeing with the switch's on the same cases."""
from __future__ import annotations

import pytest

from hosts.errors import ConfigError
from hosts.loss_model import LossBurst, LossModel, parse_burst
from p4target.switch.errors import OptionError
from p4target.switch.links.impairments import parse_impairment_spec

VALID = [
    ("2s+200ms@0.7", (2.0, 0.2, 0.7)),
    ("0s+1s@1", (0.0, 1.0, 1.0)),
    ("500us+0ms@0", (0.0005, 0.0, 0.0)),
    ("1.5s+250ms@0.25", (1.5, 0.25, 0.25)),
    ("1e1ms+2us@.5", (0.01, 0.000002, 0.5)),
]
INVALID = ["", "2s", "2s+200ms", "2s@0.7", "+200ms@0.7", "2s+@0.7", "2+200ms@0.7", "2s+200@0.7",
           "-1s+200ms@0.7", "2s+-5ms@0.7", "xs+200ms@0.7", "2s+200ms@1.5", "2s+200ms@-0.1",
           "2s+200ms@", "2s+200ms@lots", "2m+200ms@0.7", "nanms+1s@0.5", "1s+infms@0.5",
           "infs+1s@0.5", "1s+200ms@nan"]


def switch_burst(text: str) -> tuple[float, float, float]:
    burst, = parse_impairment_spec(f"burst={text}").bursts
    return burst.start, burst.duration, burst.loss


@pytest.mark.parametrize("text, expected", VALID)
def test_valid_bursts_parse_alike_on_host_and_switch(text, expected):
    host = parse_burst(text)
    assert (host.start, host.duration, host.loss) == pytest.approx(expected)
    assert switch_burst(text) == pytest.approx(expected)


@pytest.mark.parametrize("text", INVALID)
def test_invalid_bursts_are_rejected_by_both(text):
    with pytest.raises(ConfigError, match="bad burst"):
        parse_burst(text)
    with pytest.raises(OptionError):
        switch_burst(text)


def test_error_names_the_part_that_is_wrong():
    with pytest.raises(ConfigError, match=r"^bad burst duration '200': expected a time like 5ms"):
        parse_burst("2s+200@0.7")
    with pytest.raises(ConfigError, match=r"^bad burst loss '1.5': expected a probability between 0 and 1$"):
        parse_burst("2s+200ms@1.5")
    with pytest.raises(ConfigError, match=r"^bad burst '2s': expected START\+DURATION@LOSS"):
        parse_burst("2s")


def test_steady_loss_rate():
    steady = LossModel(0.1, seed=1)
    drops = sum(steady.drop(0.0) for _ in range(10000))
    assert 800 < drops < 1200
    with pytest.raises(ConfigError):
        LossModel(1.5)


def test_bursts_raise_loss_only_inside_their_windows():
    model = LossModel(0.0, seed=1, bursts=[parse_burst("500ms+100ms@0.9"), parse_burst("1500ms+100ms@0.9")])
    assert [model.in_burst(t) for t in (0.2, 0.5, 0.55, 0.6, 1.55, 2.55)] == [False, True, True, False, True, False]
    assert sum(model.drop(0.55) for _ in range(1000)) > 850
    assert sum(model.drop(0.7) for _ in range(1000)) == 0


def test_burst_never_lowers_the_steady_loss():
    model = LossModel(0.5, seed=2, bursts=[LossBurst(0.0, 1.0, 0.1)])
    drops = sum(model.drop(0.5) for _ in range(2000))
    assert 900 < drops < 1100
