"""One policy for switches and hosts (issue 14): a change applies to both from the same round.

A real training job (PS and two workers following the controller with --controller) over an
incast bottleneck. Per round, the PS's report carries the push drops the switches counted for
that round (read before the round's pull, when nothing of the next round is in flight), so
the switch side and the host side can be compared round by round.
"""
from __future__ import annotations

import json
import time

from support.topology_helpers import gradctl_json
from topo.training import TrainingJob, json_lines

POLICY = """version: 1
defaults:
  drop_threshold: 4
jobs:
  - job: 1
    name: rounds-test
    layers:
      - range: [0, 65535]
        loss_bound: {bound}
        pull_bound: 0.0
        priority: 4
        drop_eligible: true
{phases}"""


def _policy(tmp_path, bound: float, phases: str = "") -> str:
    path = tmp_path / "policy.yaml"
    path.write_text(POLICY.format(bound=bound, phases=phases))
    return str(path)


# The chunking these tests' timing was written for: with the default MTU-sized chunks a round
# moves 5.6x fewer packets, and a 24-round job ended before a policy set after round 6 applied
# (the controller keeps 32 rounds of reports, so a longer job loses the rounds before it).
CHUNKS = ("--chunk-elems", "64")


def _start(session, rounds: int, *extra: str) -> tuple[TrainingJob, str]:
    spec = session.job_spec(1, rounds=rounds, workers=2, extra_ps=(*CHUNKS, *extra),
                            extra_worker=CHUNKS)
    assert spec.controller, "the job's agents must follow the controller"
    job = TrainingJob(session.net, session.topo, session.config.topology_path, session.record,
                      session.config.log_dir, spec, session.host_sysctls())
    job.start()
    return job, session.topo.hosts_with_role("ps")[0]


def _ps_rounds(job: TrainingJob, ps_host: str) -> list[dict]:
    return [r for r in json_lines(job.processes[ps_host].output()) if r.get("event") == "round"]


def _reports(session) -> dict[int, dict]:
    jobs = gradctl_json(session, "jobs")
    return {r["round"]: r for r in jobs[0]["rounds"]}


def _finish(job: TrainingJob, timeout: float = 240):
    result = job.wait(timeout)
    assert result.ok, {n: open(p).read()[-1500:] for n, p in result.logs.items()}
    return result


def test_bound_changed_mid_job_applies_on_switches_and_hosts_from_the_same_round(network, tmp_path):
    session = network("incast", policy=_policy(tmp_path, 0.0), workers=2, background=0,
                      bottleneck_pps=2000)
    job, ps_host = _start(session, 24)
    end = time.monotonic() + 120
    while len(_ps_rounds(job, ps_host)) < 6:
        assert time.monotonic() < end, "the job did not get to round 6"
        time.sleep(0.2)
    done = session.gradctl("--json", "policy", "set", "--job", "1", "--layers", "0-65535",
                           "--loss-bound", "0.2")
    assert done.returncode == 0, done.stderr
    change = json.loads(done.stdout)["epochs"]["1"]
    effective = change["effective_round"]
    reports = None
    result = _finish(job)
    reports = _reports(session)
    print(f"change: epoch {change['epoch']} from round {effective}; switch push per round:",
          {r: (v["switch_push"] or {}).get("dropped") for r, v in sorted(reports.items())})

    # hosts: the PS's and every worker's bounds switch at exactly that round, and they log it
    ps_rounds = {r["round"]: r for r in result.records[f"ps@{ps_host}"] if r["event"] == "round"}
    assert 6 <= effective <= max(ps_rounds) - 3
    for rnd, rec in ps_rounds.items():
        assert rec["bounds"] == ([0.2, 0.2] if rnd >= effective else [0.0, 0.0]), (rnd, rec["bounds"])
        assert rec["policy_epoch"] == (change["epoch"] if rnd >= effective else change["epoch"] - 1)
    for name, records in result.records.items():
        applied = [r["round"] for r in records if r["event"] == "policy" and r["round"] > 0]
        assert applied == [effective], (name, applied)
        if name.startswith("worker"):
            for r in records:
                if r["event"] == "round":
                    assert r["push_bounds"] == ([0.2, 0.2] if r["round"] >= effective else [0.0, 0.0])

    # switches: no push drop before the change (bound 0: every chunk CRITICAL), drops after,
    # each round's drops within the new bound of that round's push packets
    counted = {r: v["switch_push"] for r, v in reports.items() if v["switch_push"]}
    before = [c["dropped"] for r, c in counted.items() if r < effective]
    after = [c for r, c in counted.items() if r >= effective]
    assert before and after and all(d == 0 for d in before), counted
    assert sum(c["dropped"] for c in after) > 0, counted
    assert all(c["dropped"] <= 0.2 * c["seen"] + 1e-9 for c in after), counted
    # and the summary the demo prints names the policy's bounds
    from topo.summary import policy_line
    assert f"epoch {change['epoch']} from round {effective}" in policy_line(result)


PHASES = """    phases:
      - rounds: [0, 4294967295]
        low: 0.0
        high: 0.3
"""


def test_the_ps_reported_regime_flips_the_switch_bound_within_one_round(network, tmp_path):
    session = network("incast", policy=_policy(tmp_path, 0.3, PHASES), workers=2, background=0,
                      bottleneck_pps=2000)
    job, ps_host = _start(session, 30, "--phase-check-rounds", "2")
    result = _finish(job)
    reports = _reports(session)
    ps_rounds = {r["round"]: r for r in result.records[f"ps@{ps_host}"] if r["event"] == "round"}
    regimes = {r: v["regime"] for r, v in reports.items()}
    print("regime per reported round:", regimes)
    assert "critical" in regimes.values() and "normal" in regimes.values(), regimes
    flips = 0
    for rnd in sorted(reports):
        if rnd + 1 not in reports:
            continue
        want = 0.3 if regimes[rnd] == "normal" else 0.0
        # hosts: the round after the report follows it
        assert ps_rounds[rnd + 1]["bounds"] == [want, want], (rnd, regimes[rnd], ps_rounds[rnd + 1]["bounds"])
        # switches: the next round's push is held to it as well (bound 0: nothing dropped)
        counted = reports[rnd + 1]["switch_push"]
        if counted and want == 0.0:
            assert counted["dropped"] == 0, (rnd + 1, counted)
        if counted:
            assert counted["dropped"] <= want * counted["seen"] + 1e-9, (rnd + 1, counted)
        flips += regimes[rnd] != regimes.get(rnd - 1, regimes[rnd])
    assert flips >= 1
    normal_drops = sum((reports[r + 1]["switch_push"] or {}).get("dropped", 0)
                       for r in reports if r + 1 in reports and regimes[r] == "normal")
    assert normal_drops > 0, "the relaxed regime never let the switches drop"
    shown = gradctl_json(session, "policy", "phase", "--job", "1")
    assert shown[0]["set_by"] == "ps" and shown[0]["scheduled"] is True
