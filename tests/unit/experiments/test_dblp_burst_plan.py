"""DBLP microbursts: the burst plan is the same for every arm of a repetition, spread over the
run, within the loss range; the PS log's round lines are read as the trigger expects."""
from __future__ import annotations

import pytest

from experiments.dblp_microbursts import ExperimentParamError, _round_of, burst_plan


def test_plan_depends_only_on_the_seed_and_spreads_over_the_run():
    a = burst_plan(7, 120, 3, (0.6, 0.9), 0.2, first_round=24)
    assert a == burst_plan(7, 120, 3, (0.6, 0.9), 0.2, first_round=24)
    assert a != burst_plan(8, 120, 3, (0.6, 0.9), 0.2, first_round=24)
    rounds = [b.round for b in a]
    assert rounds == sorted(set(rounds)) and rounds[0] >= 24 and rounds[-1] <= 118
    # one burst per third of [24, 118]: [24, 54], [55, 86], [87, 118]
    assert rounds[0] <= 54 and 55 <= rounds[1] <= 86 and 87 <= rounds[2]
    assert all(0.6 <= b.loss <= 0.9 and b.duration_s == 0.2 for b in a)


def test_every_round_can_be_planned_when_rounds_are_scarce():
    plan = burst_plan(1, 6, 4, (0.7, 0.7), 0.1, first_round=1)
    assert [b.round for b in plan] == [1, 2, 3, 4]
    with pytest.raises(ExperimentParamError):
        burst_plan(1, 6, 5, (0.7, 0.7), 0.1, first_round=1)


def test_round_lines_are_recognised_and_others_ignored():
    assert _round_of('{"event": "round", "t": 1.0, "round": 12, "time_s": 0.2}') == 12
    assert _round_of('{"event": "epoch", "round": 13, "accuracy": 0.9}') is None
    assert _round_of('{"event": "round", "round": 3') is None
    assert _round_of("round 4") is None
