"""The demo summary reads agents' JSON lines and gradctl stats without guessing missing fields."""
from topo.summary import (deadline_rounds, final_accuracy, per_layer, render, rounds_completed, stat_lines,
                          violations)
from topo.training import TrainingResult, json_lines


def _result():
    # Records as hosts.ps writes them (event round/epoch); worker records carry no push figures.
    ps = json_lines('noise\n'
                    '{"event": "round", "round": 0, "delivered": [1.0, 0.995], "delivered_min": [1.0, 0.99],'
                    ' "bounds": [0.011, 0.004]}\n'
                    '{"event": "round", "round": 1, "delivered": [0.995, 0.999]}\n{bad json\n'
                    '{"event": "round", "round": 2, "delivered": [0.5, 0.5], "delivered_min": [0.2, 0.2],'
                    ' "closed_by": ["deadline"]}\n'
                    '{"event": "epoch", "epoch": 0, "round": 1, "accuracy": 0.91}\n'
                    '{"event": "epoch", "epoch": 1, "round": 1, "accuracy": 0.94}\n')
    worker = [{"event": "round", "round": 0, "pull_delivered": [1.0, 1.0]}]
    return TrainingResult({"ps@ps": 0, "worker0@w1": 0}, {"ps@ps": ps, "worker0@w1": worker},
                          {"ps@ps": "logs/p", "worker0@w1": "logs/w"}, 3.2)


def test_parsing():
    result = _result()
    assert rounds_completed(result) == 3 and deadline_rounds(result) == 1
    layers = per_layer(result)
    nan = layers[0]["violations"]
    assert nan != nan                      # these records carry no violation counts: n/a, not 0
    assert {k: v for k, v in layers[0].items() if k != "violations"} == \
        {"min": 0.995, "min_all": 0.2, "mean": (1.0 + 0.995 + 0.5) / 3, "bound": 0.011}
    assert layers[1]["min"] == 0.99 and layers[1]["min_all"] == 0.2
    assert final_accuracy(result) == 0.94


def test_render_marks_layers_below_bound_and_failures():
    result = _result()
    result.exit_codes["worker0@w1"] = 3
    text = render(result, {"switches": [{"name": "s1", "dropped": 4, "uptime": 9}]})
    assert "FAILED" in text and "exit code 3" in text
    assert "layer 1: 0.990 / 0.200 / 0.831" in text and "1 round(s) closed by the deadline" in text and "BELOW 1-bound" in text
    assert "switches[s1].dropped: 4" in text and "uptime" not in text


def test_render_without_stats_says_na():
    text = render(TrainingResult({}, {}, {}, 0.0), None)
    assert "accuracy: n/a" in text and "gradctl stats unavailable" in text
    assert list(stat_lines({"a": True})) == []


def test_render_gradctl_stats_schema():
    stats = {"s1": {"reachable": True,
                    "classes": [{"job": 1, "layers": [0, 3], "mag_classes": [0, 7], "seen": 1000, "dropped": 8,
                                 "marked": 3, "loss": 0.008, "bound": 0.011, "within_bound": True},
                                {"job": 1, "layers": [4, 9], "mag_classes": [0, 7], "seen": 0, "dropped": 0,
                                 "marked": 0, "loss": 0, "bound": 0, "within_bound": True}],
                    "queues": [{"port": 4, "prio": 6, "tx": 992, "dropped": 8, "marked": 3},
                               {"port": 1, "prio": 0, "tx": 1, "dropped": 0, "marked": 0}]},
             "s2": {"reachable": False, "error": "timeout"}}
    text = render(TrainingResult({}, {}, {}, 0.0), stats)
    assert "s1 job 1 layers 0-3 mag 0-7: seen 1000, dropped 8 (0.80% vs bound 1.10%), CE-marked 3" in text
    assert "layers 4-9" not in text and "port 1 queue 0" not in text
    assert "s1 port 4 queue 6: tx 992, selectively dropped 8, CE-marked 3" in text
    assert "s2: unreachable (timeout)" in text


def _job(ps_rounds, worker_rounds, config=None):
    ps = [{"event": "start", "transport": (config or {}).get("transport", "ltp"), "config": config}]
    ps += [{"event": "round", "round": i, **r} for i, r in enumerate(ps_rounds)]
    workers = [{"event": "round", "round": i, **r} for i, r in enumerate(worker_rounds)]
    return TrainingResult({"ps@ps": 0, "worker0@w1": 0}, {"ps@ps": ps, "worker0@w1": workers},
                          {"ps@ps": "p", "worker0@w1": "w"}, 1.0)


def test_violations_are_counted_per_layer_and_shown_never_hidden():
    deadline = {"delivered": [0.7, 1.0], "delivered_min": [0.6, 1.0], "bounds": [0.1, 0.1],
                "closed_by": ["deadline"], "violations": [2, 0]}
    clean = {"delivered": [0.95, 1.0], "delivered_min": [0.9, 1.0], "bounds": [0.1, 0.1],
             "closed_by": ["bound"], "violations": [0, 0]}
    result = _job([clean, deadline, deadline], [{"pull_violations": [0, 1]}, {"pull_violations": [0, 0]}])
    assert violations(result) == {"push": {0: 4, 1: 0}, "pull": {0: 0, 1: 1}}
    assert per_layer(result)[0]["violations"] == 4 and per_layer(result)[0]["min_all"] == 0.6
    text = render(result, None)
    assert "bound violations: 5 (push layer 0 x4; pull layer 1 x1)  VIOLATED" in text
    assert "4 violation(s)" in text
    only_deadline = render(_job([deadline], []), None)
    assert "layer 0: n/a / 0.600 / 0.700" in only_deadline       # no bound-closed round: n/a, not nan
    ok = render(_job([clean], [{"pull_violations": [0, 0]}]), None)
    assert "bound violations: 0 (push 0; pull 0)" in ok and "VIOLATED" not in ok


def test_transport_and_pacing_are_shown_as_recorded():
    ltp = {"transport": "ltp", "pace_pps": 0, "hole_fill": "mean-delivered", "plain": False,
           "push_deadline": "adaptive 3 x ...", "pull_deadline": "none (reliable)",
           "phase_aware": True, "phase_check_rounds": 10, "phase_per_layer": False}
    text = render(_job([], [], ltp), None)
    assert "transport: ltp; pacing off; hole fill mean-delivered" in text
    assert "pull deadline none (reliable)" in text and "check every 10 rounds" in text
    mlt = {**ltp, "transport": "mlt", "plain": True, "phase_aware": False}
    result = _job([], [], mlt)
    result.records["worker0@w1"].insert(0, {"event": "start", "config": {**mlt, "pace_pps": 600}})
    assert "transport: mlt; workers paced at 600 pps each; PLAIN (no network assistance)" in render(result, None)
    assert "pacing off; initial window 10 packets, --cc ecn; hole fill" in \
        render(_job([], [], {**ltp, "window": 10, "cc": "ecn"}), None)
    assert "no window (every chunk at once)" in render(_job([], [], {**ltp, "window": 0}), None)
    tcp = {"transport": "tcp", "pace_pps": 0, "tcp_cc": "reno", "tcp_ecn": "on"}
    result = _job([], [], tcp)
    result.records["ps@ps"].append({"event": "done", "connections": {"0": {"cc": "reno", "ecn": True}}})
    assert "transport: tcp; pacing off; congestion control reno, ECN on; connections reno/ECN on" in \
        render(result, None)


def test_render_reports_each_switch_process_own_receive_drops(tmp_path):
    (tmp_path / "s1.log.stats.json").write_text('{"rx_drops_total": 0, "ports": {}}')
    (tmp_path / "s2.log.stats.json").write_text('{"rx_drops_total": 17, "ports": {}}')
    logs = {"s1": str(tmp_path / "s1.log"), "s2": str(tmp_path / "s2.log"), "s3": str(tmp_path / "s3.log")}
    text = render(TrainingResult({}, {}, {}, 0.0), None, switch_logs=logs)
    assert "switch processes' own receive drops: s1 0, s2 17, s3 n/a" in text
