"""The standard metrics an emulated job leaves in the experiments' records."""
from __future__ import annotations

from experiments.training import round_records, standard_metrics, workers_counters
from topo.training import TrainingResult


def _result(workers: dict[str, list[dict]]) -> TrainingResult:
    ps = [{"event": "start", "workers": 2, "chunks": [3, 1]},
          {"event": "done", "counters": {"retransmissions": 4}}]
    names = {"ps@ps": 0, **{name: 0 for name in workers}}
    return TrainingResult(names, {"ps@ps": ps, **workers}, {}, elapsed_s=1.0)


def test_the_workers_counters_are_summed_over_the_workers_done_records():
    result = _result({"worker0@w1": [{"event": "round"}, {"event": "done", "counters": {"late_data": 2, "retx_received": 5}}],
                      "worker1@w2": [{"event": "done", "counters": {"late_data": 1, "drop_duplicate": 3}}]})
    assert workers_counters(result) == {"late_data": 3, "retx_received": 5, "drop_duplicate": 3}
    metrics = standard_metrics(result, [], planned=1)
    assert metrics["worker_counters"] == {"late_data": 3, "retx_received": 5, "drop_duplicate": 3}
    assert metrics["ps_counters"] == {"retransmissions": 4}


def test_no_worker_counters_where_no_worker_logged_any():
    assert workers_counters(_result({"worker0@w1": [{"event": "round"}]})) is None


def test_a_rounds_violations_add_the_workers_pull_violations_to_the_pushs():
    ps = [{"event": "round", "round": 0, "t": 10.0, "time_s": 1.0, "violations": [1, 0]},
          {"event": "round", "round": 1, "t": 11.0, "time_s": 0.5, "violations": [0, 0]}]
    workers = {"worker0@w1": [{"event": "round", "round": 0, "pull_violations": [0, 1]},
                              {"event": "round", "round": 1, "pull_violations": [2, 0]}],
               "worker1@w2": [{"event": "round", "round": 1, "pull_violations": [1, 0]},
                              {"event": "round", "round": 1, "pull_violations": "n/a"}]}
    result = TrainingResult({"ps@ps": 0, "worker0@w1": 0, "worker1@w2": 0}, {"ps@ps": ps, **workers}, {},
                            elapsed_s=2.0)
    assert [r["violations"] for r in round_records(result)] == [2, 3]
