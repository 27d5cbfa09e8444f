"""Policy model: validation errors name the field; translation gives exact gradient_class entries."""
from __future__ import annotations

import pytest

from controller import p4names as N
from controller.entries import Action, Exact, Range, TableEntry, Ternary
from controller.errors import PolicyError
from controller.policy import (Features, JobState, assign_slots, basis_points, load_policy, parse_policy,
                               set_features, set_rule, slot_table, translate)


def doc(**rule):
    base = {"range": [0, 3], "loss_bound": 0.01}
    base.update(rule)
    return {"jobs": [{"job": 1, "layers": [base]}]}


@pytest.mark.parametrize("document, message", [
    (doc(loss_bound=1.5), "jobs[0].layers[0].loss_bound: must be in [0, 1], got 1.5"),
    (doc(loss_bound="x"), "jobs[0].layers[0].loss_bound: must be a number in [0, 1], got a string 'x'"),
    (doc(pull_bound=0.02), "jobs[0].layers[0].pull_bound: must not exceed the push bound 0.01"),
    (doc(priority=8), "jobs[0].layers[0].priority: must be in [0, 7], got 8"),
    (doc(priority=True), "jobs[0].layers[0].priority: must be an integer"),
    (doc(drop_eligible="yes"), "jobs[0].layers[0].drop_eligible: must be true or false"),
    (doc(range=[5, 2]), "jobs[0].layers[0].range: lo 5 is greater than hi 2"),
    (doc(range=[0, 70000]), "jobs[0].layers[0].range[1]: must be in [0, 65535], got 70000"),
    (doc(mag_classes=[0, 9]), "jobs[0].layers[0].mag_classes[1]: must be in [0, 7], got 9"),
    (doc(colour="red"), "jobs[0].layers[0].colour: unknown field"),
    (doc(phases=[{"rounds": [0, 9], "low": 0.5, "high": 0.1}]),
     "jobs[0].layers[0].phases[0].low: must not exceed high"),
    (doc(phases=[{"rounds": [0, 9], "low": 0.01, "high": 0.1},
                 {"rounds": [5, 20], "low": 0.01, "high": 0.1}]),
     "jobs[0].layers[0].phases[1].rounds: overlaps jobs[0].layers[0].phases[0].rounds"),
    ({"jobs": [{"job": 1, "layers": [{"range": [0, 3]}]}]}, "jobs[0].layers[0].loss_bound: missing"),
    ({"jobs": [{"layers": []}]}, "jobs[0].job: missing"),
    ({"jobs": [{"job": 1, "layers": []}]}, "jobs[0].layers: must be a non-empty list"),
    ({"jobs": [{"job": 70000, "layers": []}]}, "jobs[0].job: must be in [0, 65535], got 70000"),
    ({"jobs": [{"job": 1, "layers": [{"range": [0, 3], "loss_bound": 0.1}]},
               {"job": 1, "layers": [{"range": [0, 3], "loss_bound": 0.1}]}]},
     "jobs[1].job: job 1 is already defined by jobs[0]"),
    ({"jobs": [{"job": 1, "layers": [{"range": [0, 5], "loss_bound": 0.1},
                                     {"range": [5, 9], "loss_bound": 0.1}]}]},
     "jobs[0].layers[1]: overlaps jobs[0].layers[0]"),
    ({"jobs": {"job": 1}}, "jobs: must be a list"),
    ({"version": 2, "jobs": []}, "version: must be 1"),
    ({"defaults": {"priority": 9}}, "defaults.priority: must be in [0, 7], got 9"),
    ([1, 2], "policy: must be a mapping"),
])
def test_bad_policies_name_the_field(document, message):
    with pytest.raises(PolicyError) as info:
        parse_policy(document)
    assert str(info.value).startswith(message)
    assert "\n" not in str(info.value)


def test_file_errors_carry_the_file_name(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("jobs:\n  - job: 1\n    layers:\n      - range: [0, 3]\n        loss_bound: 1.5\n")
    with pytest.raises(PolicyError) as info:
        load_policy(path)
    assert str(info.value) == f"{path}: jobs[0].layers[0].loss_bound: must be in [0, 1], got 1.5"
    path.write_text("jobs: [\n")
    with pytest.raises(PolicyError, match="not valid YAML"):
        load_policy(path)
    with pytest.raises(PolicyError, match="cannot read policy"):
        load_policy(tmp_path / "missing.yaml")


def test_json_policy_and_defaults(tmp_path):
    path = tmp_path / "p.json"
    path.write_text('{"defaults": {"priority": 3, "drop_threshold": 8, "drop_eligible": false},'
                    ' "jobs": [{"job": 7, "layers": [{"range": 4, "loss_bound": 0.02}]}]}')
    rule = load_policy(path).jobs[0].rules[0]
    assert (rule.layers, rule.mag_classes, rule.priority, rule.drop_threshold) == ((4, 4), (0, 7), 3, 8)
    assert rule.drop_eligible is False and rule.pull_bound == 0.02


def test_default_policy_file_is_valid():
    policy = load_policy("controller/policies/default.yaml")
    assert [j.job_id for j in policy.jobs] == [1]
    assert len(policy.jobs[0].rules) == 3


def test_translation_gives_exact_entries():
    policy = parse_policy({"jobs": [{"job": 2, "layers": [
        {"range": [0, 3], "loss_bound": 0.011, "pull_bound": 0.005, "priority": 6},
        {"range": [4, 9], "mag_classes": [4, 7], "loss_bound": 0, "priority": 5,
         "drop_eligible": False, "drop_threshold": 30}]}]})
    slots = assign_slots(policy)
    assert translate(policy, slots) == [
        TableEntry(N.CLASS_TABLE, ((N.CLASS_KEY_JOB, Ternary(2, 0xFFFF)), (N.CLASS_KEY_LAYER, Range(0, 3)),
                                   (N.CLASS_KEY_MAG, Range(0, 7))),
                   Action.of(N.SET_CLASS, prio=6, drop_eligible=1, slot=0, push_bound_bp=110,
                             pull_bound_bp=50, drop_threshold=16), priority=1),
        TableEntry(N.CLASS_TABLE, ((N.CLASS_KEY_JOB, Ternary(2, 0xFFFF)), (N.CLASS_KEY_LAYER, Range(4, 9)),
                                   (N.CLASS_KEY_MAG, Range(4, 7))),
                   Action.of(N.SET_CLASS, prio=5, drop_eligible=0, slot=1, push_bound_bp=0,
                             pull_bound_bp=0, drop_threshold=30), priority=1),
    ]


def test_slots_are_kept_for_unchanged_rules():
    p1 = parse_policy({"jobs": [{"job": 1, "layers": [{"range": [0, 3], "loss_bound": 0.1},
                                                      {"range": [4, 9], "loss_bound": 0.1}]}]})
    s1 = assign_slots(p1)
    p2 = parse_policy({"jobs": [{"job": 1, "layers": [{"range": [0, 1], "loss_bound": 0.1},
                                                      {"range": [4, 9], "loss_bound": 0.2}]}]})
    s2 = assign_slots(p2, s1)
    assert s2[(1, 4, 9, 0, 7)] == s1[(1, 4, 9, 0, 7)] == 1
    assert s2[(1, 0, 1, 0, 7)] == 0   # the freed slot 0 is reused


def test_phase_schedule_picks_high_unless_critical():
    policy = parse_policy({"jobs": [{"job": 1, "phases": [{"rounds": [10, 19], "low": 0.008, "high": 0.048}],
                                     "layers": [{"range": [0, 3], "loss_bound": 0.01, "pull_bound": 0.004}]}]})
    slots = assign_slots(policy)

    def push(state):
        return translate(policy, slots, {1: state})[0].action.param(N.SET_CLASS_PUSH_BOUND)
    assert push(JobState()) == 100
    assert push(JobState(round=12)) == 480
    assert push(JobState(round=12, critical=True)) == 80
    assert push(JobState(round=25)) == 100
    info = slot_table(policy, slots, {1: JobState(round=12)})[0]
    assert info.loss_bound == 0.048 and info.pull_bound == 0.004


def test_set_rule_changes_or_adds_and_revalidates():
    policy = load_policy("controller/policies/default.yaml")
    changed = set_rule(policy, 1, (0, 3), loss_bound=0.2, priority=7)
    rule = changed.jobs[0].rules[0]
    assert (rule.loss_bound, rule.priority, rule.pull_bound) == (0.2, 7, 0.025)
    lowered = set_rule(policy, 1, (0, 3), loss_bound=0.001)
    assert lowered.jobs[0].rules[0].pull_bound == 0.001   # pull stays the tighter bound
    added = set_rule(policy, 9, (0, 10), loss_bound=0.05)
    assert added.job(9).rules[0].layers == (0, 10)
    with pytest.raises(PolicyError, match="a new rule needs a loss bound"):
        set_rule(policy, 9, (0, 10), priority=3)
    with pytest.raises(PolicyError, match=r"jobs\[0\].layers\[3\]: overlaps"):
        set_rule(policy, 1, (2, 5), loss_bound=0.05)
    assert basis_points(0.011) == 110


def test_job_switches_default_on_and_only_a_job_turning_one_off_gets_an_entry():
    policy = parse_policy({"jobs": [
        {"job": 1, "layers": [{"range": [0, 3], "loss_bound": 0.01}]},
        {"job": 2, "spray": False, "selective_drop": False,
         "layers": [{"range": [0, 3], "loss_bound": 0.01}]}]})
    assert policy.job(1).features == Features(True, True, True)
    assert policy.job(2).features == Features(spray=False, prioritize=True, selective_drop=False)
    entries = [e for e in translate(policy, assign_slots(policy)) if e.table == N.JOB_FEATURES_TABLE]
    assert entries == [TableEntry(N.JOB_FEATURES_TABLE, ((N.JOB_FEATURES_KEY_JOB, Exact(2)),),
                                  Action.of(N.SET_JOB_FEATURES, spray=0, priority=1, selective_drop=0))]


@pytest.mark.parametrize("job, message", [
    ({"spray": "no"}, "jobs[0].spray: must be true or false, got a string 'no'"),
    ({"prioritize": 0}, "jobs[0].prioritize: must be true or false, got an integer 0"),
    ({"selective_drop": None}, "jobs[0].selective_drop: must be true or false"),
])
def test_bad_job_switches_name_the_field(job, message):
    with pytest.raises(PolicyError) as info:
        parse_policy({"jobs": [{"job": 1, "layers": [{"range": [0, 3], "loss_bound": 0.01}], **job}]})
    assert str(info.value).startswith(message)


def test_set_features_changes_one_job_and_revalidates():
    policy = load_policy("controller/policies/default.yaml")
    off = set_features(policy, 1, prioritize=False, spray=None)
    assert off.job(1).features == Features(spray=True, prioritize=False, selective_drop=True)
    assert off.document["jobs"][0]["prioritize"] is False
    assert set_features(off, 1, prioritize=True).job(1).features == Features()
    with pytest.raises(PolicyError, match="no job 7 in the current policy"):
        set_features(policy, 7, spray=False)


def test_job_phases_never_relax_a_bound_0_rule():
    policy = parse_policy({"jobs": [{"job": 1, "phases": [{"rounds": [0, 99], "low": 0.01, "high": 0.4}],
                                     "layers": [{"range": [0, 3], "loss_bound": 0.01},
                                                {"range": [4, 9], "loss_bound": 0}]}]})
    slots = assign_slots(policy)
    bounds = [e.action.param(N.SET_CLASS_PUSH_BOUND)
              for e in translate(policy, slots, {1: JobState(round=5)}) if e.table == N.CLASS_TABLE]
    assert bounds == [4000, 0]
