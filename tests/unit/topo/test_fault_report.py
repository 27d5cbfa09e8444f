"""What each fault cost, read from the PS's records."""
from topo.fault_report import fault_lines, fault_rows, round_at
from topo.training import TrainingResult


def _result(records):
    return TrainingResult(exit_codes={"ps@ps": 0}, records={"ps@ps": records}, logs={}, elapsed_s=1.0)


def _round(n, end, lost=(), violations=(0, 0), time_s=1.0):
    return {"event": "round", "round": n, "t": end, "time_s": time_s, "lost": list(lost),
            "violations": list(violations)}


def test_a_switch_fault_costs_the_rounds_that_ran_while_it_was_down():
    # rounds of 1 s ending at 101, 102, ...: round 2 runs 102..103
    records = [_round(n, 101.0 + n) for n in range(10)]
    records[3] = _round(3, 104.0, violations=(1, 1))
    result = _result(records)
    assert round_at(result, 102.5) == 2
    [row] = fault_rows([{"name": "s1", "kind": "switch", "crashed_at": 102.5, "recovered_s": 1.8}], result)
    # down 102.5 .. 104.3: rounds 2, 3 and 4 ran then
    assert row == {"name": "s1", "kind": "switch", "round": 2, "recovery_s": 1.8,
                   "rounds_cost": 3, "violations": 2}
    [never] = fault_rows([{"name": "controller", "kind": "controller", "crashed_at": 107.5,
                           "recovered_s": None}], result)
    assert never["rounds_cost"] == 3 and never["recovery_s"] is None
    assert fault_lines([row, never])[0] == "faults survived: 1 of 2"


def test_a_worker_fault_costs_the_rounds_without_it():
    records = [_round(n, 101.0 + n, lost=[2] if 4 <= n <= 6 else []) for n in range(10)]
    records += [{"event": "member", "t": 104.5, "rank": 2, "change": "absent", "round": 4},
                {"event": "member", "t": 106.2, "rank": 2, "change": "rejoined", "first_push": 7}]
    [row] = fault_rows([{"name": "worker2@w3", "kind": "worker", "rank": 2, "crashed_at": 103.2}],
                       _result(records))
    assert row["round"] == 3 and row["rounds_cost"] == 3
    assert row["recovery_s"] == 1.3 and row["readmitted_s"] == 3.0
    assert "re-admitted 3.00 s after its death" in fault_lines([row])[1]
