"""One training job survives a switch, the controller and a worker being killed (by PID) at
chosen rounds: the job finishes, its summary lists each fault with its time to recovery and
the rounds it cost, every violation is counted, and the accuracy stays within 2 points of a
fault-free reference with the same seed (the reliable arm, the same in every run: 0.955432;
the bar is set from the faults' measured share, below)."""
from topo.agents import RELIABLE_FLAGS
from topo.chaos import AGENT_FLAGS, FaultInjector
from topo.fault_report import fault_rows
from topo.summary import final_accuracy, render, rounds_completed
from topo.training import TrainingResult

ROUNDS = 60
PARAMS = dict(workers=3, background=0, bottleneck_pps=2000)
# 64-value chunks: the round length these kill points were chosen for (with MTU-sized chunks the
# last 20 rounds end before the killed worker has started again)
FLAGS = (*AGENT_FLAGS, "--chunk-elems", "64")
PEER_TIMEOUT_S = float(AGENT_FLAGS[AGENT_FLAGS.index("--peer-timeout") + 1])


def _ps_records(result: TrainingResult) -> list[dict]:
    return [r for name, recs in result.records.items() if name.startswith("ps") for r in recs]


def test_a_job_survives_a_switch_the_controller_and_a_worker_dying(network):
    # the fault-free reference delivers every value (RELIABLE_FLAGS): the same for every run
    clean_session = network("incast", **PARAMS)
    reference = (*FLAGS, *RELIABLE_FLAGS)
    clean = clean_session.train(rounds=ROUNDS, workers=3, timeout=400,
                                extra_ps=reference, extra_worker=reference)
    assert clean.ok, {n: open(p).read()[-1500:] for n, p in clean.logs.items()}
    clean_session.stop()

    session = network("incast", **PARAMS)
    job_id = session.start_job(rounds=ROUNDS, workers=3, extra_ps=FLAGS, extra_worker=FLAGS)
    chaos = FaultInjector(session, job_id)
    chaos.one_of_each()          # s1 at round 10, the controller at 25, worker rank 2 at 40
    result = session.finish_job(job_id, timeout=400)
    assert result.ok, {n: open(p).read()[-1500:] for n, p in result.logs.items()}
    assert rounds_completed(result) == ROUNDS

    faults = chaos.faults()
    assert [(f["name"], f["kind"]) for f in faults] == [
        ("s1", "switch"), ("controller", "controller"), ("worker2@w3", "worker")]
    rows = fault_rows(faults, result)
    for row, at in zip(rows, (10, 25, 40)):
        assert row["recovery_s"] is not None and row["recovery_s"] > 0, row
        assert row["rounds_cost"] >= 1 and at <= row["round"] <= at + 3, row
    assert rows[2]["readmitted_s"] > rows[2]["recovery_s"]
    # the controller re-programmed the restarted s1 and said its counters restarted
    assert "s1: the switch restarted" in (session.controller.output() if session.controller else "")
    text = render(result, session.stats(), faults=faults)
    print(text)
    assert "faults survived: 3 of 3" in text
    for name in ("s1 (switch)", "controller (controller)", "worker2@w3 (worker)"):
        assert name in text

    # every violation is counted: the PS's totals are its violation records, one per layer
    ps = _ps_records(result)
    records = [r for r in ps if r.get("event") == "violation"]
    done = next(r for r in ps if r.get("event") == "done")
    assert sum(done["violations"]) == len(records)
    assert sum(r["violations"] for r in rows) <= len(records)
    # the dead worker's missing pushes are counted as lost, and it came back. A switch outage
    # longer than --peer-timeout makes every worker it cuts off absent (they re-join when s1 is
    # back): each re-join is the killed worker's, or follows an absence while s1 was down.
    assert int(done["lost_contributions"]["2"]) >= 1
    s1_down = (float(faults[0]["crashed_at"]), float(faults[0]["crashed_at"]) + rows[0]["recovery_s"])
    cut_off = {m["rank"] for m in ps if m.get("event") == "member" and m.get("change") == "absent"
               and s1_down[0] <= float(m["t"]) <= s1_down[1] + PEER_TIMEOUT_S}
    expected = {str(rank): (rank == 2) + (rank in cut_off) for rank in range(3)}
    assert done["rejoins"] == {r: n for r, n in expected.items() if n}, (done["rejoins"], cut_off)

    acc_clean, acc_chaos = final_accuracy(clean), final_accuracy(result)
    losses = [next(r for r in reversed(_ps_records(res)) if r.get("event") == "epoch")["loss"]
              for res in (clean, result)]
    print(f"accuracy fault-free {acc_clean:.4f} (train loss {losses[0]:.4f}), with faults "
          f"{acc_chaos:.4f} (train loss {losses[1]:.4f})")
    # 2 points, not 1, from the faults' own share (docs/faults.md "Repeatable accuracy",
    # `scripts/accuracy_spread.py --arms chaos-clean,chaos --runs 5`, seed 1): the reference is
    # deterministic (0.955432), this scenario without faults ended 0 to +0.28 points from it
    # in 5 of 5 runs, with the faults -0.61 points on average (sd 0.41), down to -1.11 in one
    # run of 5; the faults' share against the fault-free runs: mean -0.72 points, one-sided 95 %
    # lower bound -1.14. A 1-point bar would fail one run in five; 2 points is above mean - 3 sd
    # (-1.85).
    assert abs(acc_clean - acc_chaos) <= 0.02
