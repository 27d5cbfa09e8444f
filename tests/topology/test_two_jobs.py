"""Issue 14's third bar: two jobs with different policies share one bottleneck. Each job's
selective drops stay within its own bound and are charged only to its own classes; PCN events
are counted per job; the controller's PCN law adapts only the job whose policy turns it on."""
import json

from support.topology_helpers import classes, gradctl_json, selective_drops
from topo.summary import per_layer, rounds_completed, tensor_delivery, violations

ROUNDS = 6
BOUNDS = {1: (0.10, 0.04), 2: (0.02, 0.01)}   # job -> (push, pull)
# Load, from the load sweep (docs/results/load, `python -m topo.load_sweep`, seed 1, embedded
# switch, this test's network and policy, 60 rounds a job): with 2 workers a job, 1, 2 and 3
# concurrent jobs held and 4 did not (a worker left behind); this test runs 2, half the knee.
# What once failed it under load was job 2's adaptive deadline (200 ms floor) closing 5 of 6
# rounds: every push and pull deadline here starts at 2 s and never goes below 1.8 s, above the
# p90 round time of 3 jobs x 2 workers (1.74 s, the last cell before the knee, load average 6.8
# to 8.7 on 2 cores), so a loaded machine stretches rounds rather than closing them early.
DEADLINES = ("--deadline-ms", "2000", "--deadline-floor-ms", "1800")


def _policy(path) -> str:
    jobs = []
    for job, (push, pull) in BOUNDS.items():
        jobs.append({"job": job, "name": f"job{job}",
                     "pcn": {"threshold": 10, "adapt": job == 1, "floor": 5, "ceiling": 40},
                     "early_close": "telemetry" if job == 1 else "adaptive",
                     "layers": [{"range": [0, 65535], "loss_bound": push, "pull_bound": pull,
                                 "priority": 4, "drop_eligible": True, "drop_threshold": 4}]})
    path.write_text(json.dumps({"version": 1, "jobs": jobs}))
    return str(path)


def test_two_jobs_two_policies_one_bottleneck(network, tmp_path):
    session = network("incast", policy=_policy(tmp_path / "two.json"), workers=2, background=0,
                      bottleneck_pps=2000, queue_depth=256, jobs=2)
    # no bound flags: each job's hosts follow the controller's policy for their job (bounds,
    # Early Close law); only job 1's workers announce their bursts (PCN)
    started = {1: session.start_job(ROUNDS, 2, extra_ps=DEADLINES, extra_worker=(*DEADLINES, "--pcn")),
               2: session.start_job(ROUNDS, 2, extra_ps=DEADLINES, extra_worker=DEADLINES)}
    assert sorted(started.values()) == [1, 2]
    assert {j.job.group for j in session.running.values()} == {0, 1}
    results = {job: session.finish_job(job, timeout=400) for job in started}
    for job, result in results.items():
        assert result.ok, {name: open(path).read()[-1500:] for name, path in result.logs.items()}
        assert rounds_completed(result) >= ROUNDS
        start = next(r for name, recs in result.records.items() if name.startswith("ps")
                     for r in recs if r.get("event") == "start")
        law = "telemetry" if job == 1 else "adaptive"
        assert start["config"]["push_deadline"].startswith(law), (job, start["config"])

    stats = gradctl_json(session, "stats")
    rows = classes(stats)
    total = selective_drops(stats)          # every drop is in exactly one class (and one queue)
    per_job = {job: {"seen": 0, "dropped": 0} for job in BOUNDS}
    for row in rows:
        push, pull = BOUNDS[row["job"]]
        assert row["push"]["bound"] == push and row["pull"]["bound"] == pull
        assert row["push"]["dropped"] <= push * row["push"]["seen"], row
        assert row["pull"]["dropped"] <= pull * row["pull"]["seen"], row
        assert row["within_bound"], row
        per_job[row["job"]]["seen"] += row["seen"]
        per_job[row["job"]]["dropped"] += row["dropped"]
    assert per_job[1]["dropped"] + per_job[2]["dropped"] == total
    assert per_job[1]["dropped"] > 0, f"no congestion reached the budgets: {per_job}"
    # job 2's tighter budget was never spent by job 1's drops (nor the reverse)
    assert per_job[2]["dropped"] <= BOUNDS[2][0] * per_job[2]["seen"]

    pcn = {r["job"]: r for r in gradctl_json(session, "pcn", "jobs")}
    assert pcn[1]["starts"]["s1"] >= ROUNDS * 2 and pcn[2]["starts"]["s1"] == 0
    assert pcn[2]["threshold"] == 10 and pcn[2]["last_adaptation"] is None

    for job, result in results.items():
        push, _ = BOUNDS[job]
        layers = per_layer(result)
        v = violations(result)
        # One bound over the tensor (the agents' default scope): rounds closed by the bound
        # delivered at least 1 - the job's own bound of the whole tensor, holes in any layer; a
        # close by the deadline may deliver less (tail drops and link loss are not the
        # switches' bounded drops): it is counted as a violation and must not be most rounds.
        # (A CI run saw job 2's adaptive deadline close 3 of 6 rounds under the shared queue.)
        tensor = tensor_delivery(result)
        assert tensor is not None and not tensor["min"] < 1 - push - 1e-6, (job, tensor)
        ps_rounds = [r for name, recs in result.records.items() if name.startswith("ps")
                     for r in recs if r.get("event") == "round"]
        for rec in ps_rounds:
            if rec["delivered_tensor_min"] < 1 - push - 1e-6:
                assert sum(rec["violations"]) >= 1, (job, rec)   # it was counted
        for layer, row in layers.items():
            assert row["bound"] == push, (job, layer, row)
            assert v["push"].get(layer, 0) <= ROUNDS // 2, (job, v)
        print(f"job {job}: bound {push:.2%}; switch: {per_job[job]['dropped']}/"
              f"{per_job[job]['seen']} dropped; host violations {v}; per layer "
              + ", ".join(f"{la}: mean {r['mean']:.4f} min (bound closes) {r['min']:.4f} min (all) "
                           f"{r['min_all']:.4f}" for la, r in layers.items()))
    print(f"PCN: job 1 threshold {pcn[1]['threshold']} (last: {pcn[1]['last_adaptation']}), "
          f"starts {pcn[1]['starts']}, job 2 starts {pcn[2]['starts']}")
