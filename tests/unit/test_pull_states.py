"""scripts/pull_states.py: the share of pull-session time per state, from recorded sessions."""
import json

from scripts import pull_states


def test_report_times_each_state_from_start_to_stop(tmp_path, capsys):
    records = [
        {"round": 0, "rank": 1, "plain": False, "cc_loss": "always", "start": 0.0, "stop": 10.0,
         "states": [[1.0, "window", 12.0], [7.0, "paced", 20.0], [9.0, "waiting", 20.0]]},
        {"round": 0, "rank": 1, "plain": True, "cc_loss": "always", "start": 0.0, "stop": 4.0,
         "states": [[0.0, "paced", 300.0]]},
    ]
    (tmp_path / "pull-1.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    pull_states.report(str(tmp_path))
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "ltp, --cc-loss always: share of pull-session time: sending 0.10, paced 0.20, window 0.60, "
        "waiting 0.10; median window when window 12.0, paced 20.0",
        "mlt (plain): share of pull-session time: sending 0.00, paced 1.00, window 0.00, "
        "waiting 0.00; median window when paced 300.0",
    ]


def test_usage_errors_exit_2(capsys):
    assert pull_states.main([]) == 2
    assert pull_states.main(["out", "regimes"]) == 2
    assert "usage: pull_states.py" in capsys.readouterr().err
