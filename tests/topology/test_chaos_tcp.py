"""The TCP baseline survives a worker killed mid-training, as the UDP arms do: worker 0 (on w1)
is killed by PID, the PS goes on without it (its connection broke), the worker is started again
with the same flags, re-joins with the job's key over a new connection, takes the current model
whole and pushes again; the job finishes every round with exit 0."""
from topo.chaos import AGENT_FLAGS, FaultInjector
from topo.fault_report import fault_rows
from topo.summary import rounds_completed
from topo.training import TrainingResult

# TCP rounds take ~0.13 s here (3 workers, incast at 2000 pps): 300 rounds leave a restarted
# worker (several seconds to start on a loaded machine) time to come back before the end.
ROUNDS = 300
PARAMS = dict(workers=3, background=0, bottleneck_pps=2000)


def _ps_records(result: TrainingResult) -> list[dict]:
    return [r for name, recs in result.records.items() if name.startswith("ps") for r in recs]


def test_a_tcp_job_survives_worker_w1_killed_and_restarted(network):
    session = network("incast", transport="tcp", **PARAMS)
    job_id = session.start_job(rounds=ROUNDS, workers=3, extra_ps=AGENT_FLAGS, extra_worker=AGENT_FLAGS)
    chaos = FaultInjector(session, job_id)
    chaos.wait_round(10)
    chaos.kill_worker(0)
    result = session.finish_job(job_id, timeout=400)
    assert result.ok, {n: open(p).read()[-1500:] for n, p in result.logs.items()}
    assert rounds_completed(result) == ROUNDS

    faults = chaos.faults()
    assert [(f["name"], f["kind"]) for f in faults] == [("worker0@w1", "worker")]
    row = fault_rows(faults, result)[0]
    assert row["recovery_s"] is not None and row["readmitted_s"] > row["recovery_s"], row
    ps = _ps_records(result)
    start = next(r for r in ps if r.get("event") == "start")
    assert start["config"]["transport"] == "tcp"
    members = [(m["rank"], m["change"]) for m in ps if m.get("event") == "member"]
    assert members == [(0, "absent"), (0, "rejoined")]
    done = next(r for r in ps if r.get("event") == "done")
    assert int(done["lost_contributions"]["0"]) >= 1 and done["rejoins"] == {"0": 1}
    assert done["absent_at_end"] == []
    # every worker process that ran to the end (the restarted one included) exited 0
    workers = {n: recs for n, recs in result.records.items() if n.startswith("worker0")}
    assert any(any(r.get("event") == "rejoin" for r in recs) for recs in workers.values()), workers.keys()
