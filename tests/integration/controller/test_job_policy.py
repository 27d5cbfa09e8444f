"""The job policy API (issue 14) against a real daemon on four test P4Runtime switches:
job.policy, job.report, jobs, policy.phase(.show), and the previous-epoch entries on switches."""
from __future__ import annotations

import json
import threading

import pytest

from controller import api, errors
from controller import p4names as N
from controller.gradctl import main as gradctl
from controller.p4info import P4Info
from support.controller_daemon import Network, stop_daemon

POLICY = """version: 1
jobs:
  - job: 1
    name: one
    hole_fill: zero
    layers:
      - range: [0, 0]
        loss_bound: 0.05
        pull_bound: 0.02
        priority: 6
      - range: [1, 3]
        mag_classes: [0, 3]
        loss_bound: 0.01
        priority: 4
      - range: [1, 3]
        mag_classes: [4, 7]
        loss_bound: 0.0
        priority: 5
        drop_eligible: false
  - job: 2
    name: phased
    layers:
      - range: [0, 9]
        loss_bound: 0.1
        pull_bound: 0.0
        phases:
          - rounds: [0, 1000]
            low: 0.0
            high: 0.3
"""


@pytest.fixture
def daemon(tmp_path):
    net = Network(tmp_path)
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    proc = net.start_daemon("--policy", str(policy))
    yield net
    stop_daemon(proc)
    net.stop()


def _call(net, cmd, **args):
    return api.call(net.socket, cmd, args)


def _class_entries(net, switch="s1"):
    """(priority, epoch match or None, push bound) of every gradient_class entry on a switch."""
    info = P4Info(net.servers[switch].p4info)
    table = info.table_id(N.CLASS_TABLE)
    epoch_field = info.match_field(N.CLASS_TABLE, N.CLASS_KEY_EPOCH).id
    push = info.param(N.SET_CLASS, N.SET_CLASS_PUSH_BOUND).id
    out = []
    for e in net.servers[switch].entities("table_entry"):
        te = e.table_entry
        if te.table_id != table:
            continue
        epoch = next((int.from_bytes(m.ternary.value, "big") for m in te.match
                      if m.field_id == epoch_field), None)
        bound = next(int.from_bytes(p.value, "big") for p in te.action.action.params if p.param_id == push)
        out.append((te.priority, epoch, te.match[0].ternary.value[-1], bound))
    return sorted(out)


def test_host_view_per_layer(daemon):
    view = _call(daemon, "job.policy", job=1, layers=5)
    assert view["push_bounds"] == [0.05, 0.0, 0.0, 0.0, 0.0]   # a bound-0 class makes the layer critical
    assert view["pull_bounds"] == [0.02, 0.0, 0.0, 0.0, 0.0]
    assert view["droppable"][0] == list(range(8)) and view["droppable"][1] == [0, 1, 2, 3]
    assert view["droppable"][4] == []                          # no rule covers layer 4
    assert view["priorities"][1] == [4, 4, 4, 4, 5, 5, 5, 5] and view["priorities"][4] == [None] * 8
    assert view["hole_fill"] == "zero" and view["previous"] is None
    assert (view["epoch"], view["wire_epoch"], view["effective_round"]) == (1, 1, 0)
    assert view["phase"] == {"scheduled": False, "regime": "normal", "set_by": "policy",
                             "p_low": None, "p_high": None}
    with pytest.raises(errors.RemoteError, match="no job 7 in the current policy"):
        _call(daemon, "job.policy", job=7, layers=2)
    with pytest.raises(errors.RemoteError, match="layers: must be in"):
        _call(daemon, "job.policy", job=1, layers=0)
    with pytest.raises(errors.RemoteError, match="regime: must be one of critical, normal"):
        _call(daemon, "job.report", job=1, layers=2, round=0, regime="hot")
    with pytest.raises(errors.RemoteError, match="violations"):
        _call(daemon, "job.report", job=1, layers=2, round=0, violations=[0.5, 1])


def test_operator_change_applies_two_rounds_after_the_last_report(daemon):
    _call(daemon, "job.policy", job=1, layers=2)
    for rnd in range(3):
        r = _call(daemon, "job.report", job=1, layers=2, round=rnd, delivered=[1.0, 1.0],
                  bounds=[0.05, 0.0], violations=[0, 0])
        assert r["epoch"] == 1 and r["switch_push"] == (None if rnd == 0 else {"seen": 0, "dropped": 0})
    assert [e[:2] for e in _class_entries(daemon)] == [(1, None)] * 4
    done = _call(daemon, "policy.set", job=1, layers=[0, 0], loss_bound=0.2)
    assert done["epochs"] == {"1": {"epoch": 2, "effective_round": 4}}   # last report 2 -> 2 + 2
    # the job's previous entries again, for epoch 1 only, above the current ones
    entries = _class_entries(daemon)
    assert sorted(e[:2] for e in entries) == [(1, None)] * 4 + [(2, 1)] * 3
    assert (2, 1, 1, 500) in entries and (1, None, 1, 2000) in entries
    view = _call(daemon, "job.policy", job=1, layers=2)
    assert view["effective_round"] == 4 and view["push_bounds"] == [0.2, 0.0]
    assert view["previous"]["epoch"] == 1 and view["previous"]["push_bounds"] == [0.05, 0.0]
    # reporting round 3 changes nothing yet; round 4 (the effective round) removes epoch 1's entries
    _call(daemon, "job.report", job=1, layers=2, round=3, violations=[1, 0])
    assert len(_class_entries(daemon)) == 7
    r = _call(daemon, "job.report", job=1, layers=2, round=4, violations=[2, 0])
    assert r["previous"] is None and len(_class_entries(daemon)) == 4
    jobs = _call(daemon, "jobs")
    assert [(j["job"], j["round"], j["epoch"], j["violations"]) for j in jobs] == [(1, 4, 2, 3)]
    assert jobs[0]["last_adaptation"]["round"] == 4 and jobs[0]["last_adaptation"]["by"] == "operator"
    assert "layers 0-0 push 0.05->0.2" in jobs[0]["last_adaptation"]["what"]


def test_reported_regime_flips_the_bound_from_the_next_round(daemon):
    _call(daemon, "job.policy", job=2, layers=1)
    r = _call(daemon, "job.report", job=2, layers=1, round=0, regime="critical")
    # the report of round 0 applies from round 1: P_low (0) instead of the plain bound (0.1)
    # that holds before the controller knows the job's round
    assert (r["epoch"], r["effective_round"], r["push_bounds"]) == (2, 1, [0.0])
    assert r["previous"]["push_bounds"] == [0.1]
    assert r["phase"]["set_by"] == "ps" and r["phase"]["p_low"] == [0.0] and r["phase"]["p_high"] == [0.3]
    assert sorted(e[3] for e in _class_entries(daemon) if e[2] == 2) == [0, 1000]   # new, and epoch 1's
    r = _call(daemon, "job.report", job=2, layers=1, round=1, regime="critical")
    assert (r["epoch"], r["previous"]) == (2, None)   # same regime: no new epoch; epoch 1 retired
    r = _call(daemon, "job.report", job=2, layers=1, round=2, regime="normal")
    assert (r["epoch"], r["effective_round"], r["push_bounds"]) == (3, 3, [0.3])
    shown = _call(daemon, "policy.phase.show", job=2)
    assert [(p["regime"], p["set_by"], p["scheduled"], p["round"]) for p in shown] == \
        [("normal", "ps", True, 3)]
    _call(daemon, "job.report", job=2, layers=1, round=3, regime="normal")   # epoch 3 in effect
    _call(daemon, "policy.phase", job=2, critical=True)   # the operator: two rounds after report 3
    shown = _call(daemon, "policy.phase.show", job=2)[0]
    assert (shown["set_by"], shown["regime"], shown["effective_round"]) == ("operator", "critical", 5)


def test_a_change_waits_for_the_pending_one_to_apply(daemon):
    _call(daemon, "job.policy", job=2, layers=1)
    _call(daemon, "job.report", job=2, layers=1, round=0, regime="normal")
    _call(daemon, "job.report", job=2, layers=1, round=1, regime="critical")   # pending from round 2
    result: dict = {}
    def change() -> None:
        try:
            result.update(_call(daemon, "policy.set", job=2, layers=[0, 9], priority=3))
        except errors.ControllerError as exc:
            result["error"] = str(exc)

    worker = threading.Thread(target=change)
    worker.start()
    worker.join(1.0)
    assert worker.is_alive(), f"the operator's change must wait (round 2 may run epoch 3): {result}"
    _call(daemon, "job.report", job=2, layers=1, round=2, regime="critical")
    worker.join(10)
    assert not worker.is_alive() and result["epochs"]["2"]["effective_round"] == 4


def test_gradctl_jobs_phase_and_stats_watch(daemon, capsys):
    _call(daemon, "job.policy", job=1, layers=2)
    for rnd in range(2):
        _call(daemon, "job.report", job=1, layers=2, round=rnd, delivered=[0.97, 1.0],
              bounds=[0.05, 0.0], violations=[1, 0], regime="normal")
    s = ["--socket", str(daemon.socket)]
    assert gradctl([*s, "jobs"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split()[:4] == ["JOB", "NAME", "RUNNING", "ROUND"]
    assert "97.00%" in out and "5.00%" in out
    assert gradctl([*s, "jobs", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["violations"] == 2
    assert gradctl([*s, "policy", "phase"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split()[:5] == ["1", "one", "2", "normal", "ps"]
    assert gradctl([*s, "stats", "--watch", "--interval", "0.05", "--count", "2"]) == 0
    out = capsys.readouterr().out
    assert out.count("\x1b[H\x1b[2J") == 2 and "host-side bound violations (PS reports): job 1 2" in out
    with pytest.raises(SystemExit) as exited:
        gradctl([*s, "stats", "--count", "2"])
    assert exited.value.code == 2 and "--count needs --watch" in capsys.readouterr().err
    assert gradctl([*s, "policy", "phase", "--critical", "yes"]) == 1
    assert "setting the regime needs --job" in capsys.readouterr().err


def test_control_laws_reach_hosts_and_come_back_in_jobs(daemon, capsys):
    """The host view names the job's Early Close law; the PS's report of a deadline change and
    the round's telemetry show in `jobs`, beside the PCN law's state (docs/control-laws.md)."""
    view = _call(daemon, "job.policy", job=1, layers=2)
    assert view["early_close"] == "telemetry"             # the policy's default law
    change = {"round": 1, "deadline_ms": 400.0, "previous_ms": 500.0, "reason": "queues empty"}
    _call(daemon, "job.report", job=1, layers=2, round=0, delivered=[1.0, 1.0], bounds=[0.05, 0.0],
          violations=[0, 0], deadline_s=0.5, tele_max_qdepth=3, tele_qdelay_us=1200,
          deadline_adaptation=change)
    job = _call(daemon, "jobs")[0]
    laws = job["control_laws"]
    assert laws["early_close"] == "telemetry" and laws["deadline_s"] == 0.5
    assert {k: v for k, v in laws["last_deadline_adaptation"].items() if k != "at"} == change
    assert laws["pcn_threshold"] is None and laws["pcn_law"] is None   # the job has no pcn setting
    assert job["rounds"][-1]["tele_qdelay_us"] == 1200
    code = gradctl(["--socket", str(daemon.socket), "jobs"])
    assert code == 0 and ("job 1: early close telemetry 500 ms (round 1: 500 -> 400 ms, "
                          "queues empty)") in capsys.readouterr().out
    with pytest.raises(errors.RemoteError, match="deadline_adaptation: must be"):
        _call(daemon, "job.report", job=1, layers=2, round=1, deadline_adaptation={"round": 1})
    # switching the law is a change hosts follow: a new epoch, from the usual round
    done = _call(daemon, "policy.apply", document={**_doc(), "jobs": [
        {**_doc()["jobs"][0], "early_close": "adaptive"}, _doc()["jobs"][1]]})
    assert done["epochs"]["1"]["epoch"] == 2
    assert _call(daemon, "job.policy", job=1, layers=2)["early_close"] == "adaptive"


def _doc():
    import yaml
    return yaml.safe_load(POLICY)
