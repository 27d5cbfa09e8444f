"""gradctl's arguments, policy files and one-line errors, in-process and with no daemon
running (the daemon and gradctl end to end: tests/integration/controller/test_gradctl.py)."""
from __future__ import annotations

import json

import pytest
import yaml

from controller.gradctl import main


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


TWO_JOBS = {"version": 1, "jobs": [
    {"job": 1, "name": "first", "pcn": {"threshold": 15, "adapt": True, "floor": 5, "ceiling": 40},
     "layers": [{"range": [0, 65535], "loss_bound": 0.05}]},
    {"job": 2, "name": "second", "early_close": "adaptive",
     "pcn": {"threshold": 20, "adapt": False},
     "layers": [{"range": [0, 65535], "loss_bound": 0.01}]},
]}


@pytest.mark.parametrize("argv", [[], ["policy"], ["policy", "apply"], ["policy", "set"], ["stats"],
                                  ["pcn"], ["pcn", "set"], ["switches"], ["policy", "phase"]])
def test_help_everywhere(argv, capsys):
    with pytest.raises(SystemExit) as info:
        main(argv + ["--help"])
    assert info.value.code == 0
    assert "usage: gradctl" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["policy", "set", "--job", "1", "--layers", "5-2", "--loss-bound", "0.1"], "expected 0 <= LO <= HI"),
    (["policy", "set", "--job", "1", "--layers", "0-3", "--loss-bound", "1.5"], "must be in [0, 1], got 1.5"),
    (["policy", "set", "--job", "1", "--layers", "0-3", "--priority", "9"], "priority must be 0..7"),
    (["policy", "set", "--job", "1", "--layers", "0-3", "--drop-eligible", "maybe"], "expected yes or no"),
    (["policy", "set", "--layers", "0-3"], "the following arguments are required: --job"),
    (["policy", "set", "--job", "1"], "policy set: nothing to change"),
    (["policy", "set", "--job", "1", "--loss-bound", "0.1"], "policy set: rule fields need --layers LO-HI"),
    (["policy", "set", "--job", "1", "--spray", "sometimes"], "expected yes or no, got 'sometimes'"),
    (["pcn", "set", "--switch", "s1", "--port", "x", "--threshold", "3"], "expected a non-negative integer"),
    (["frobnicate"], "invalid choice: 'frobnicate'"),
])
def test_bad_arguments_exit_2_with_one_line(argv, message, capsys):
    with pytest.raises(SystemExit) as info:
        main(argv)
    err = capsys.readouterr().err
    assert info.value.code == 2
    assert message in err and err.startswith("gradctl: error:") and err.count("\n") == 1


def test_bad_policy_file_is_named_before_anything_is_sent(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("jobs:\n  - job: 1\n    layers:\n      - {range: [0, 3], loss_bound: 1.5}\n")
    code, out, err = run(capsys, "--socket", str(tmp_path / "none.sock"), "policy", "apply", str(bad))
    assert code == 1
    assert err == f"gradctl: error: {bad}: jobs[0].layers[0].loss_bound: must be in [0, 1], got 1.5\n"
    code, out, err = run(capsys, "policy", "apply", "--check", "controller/policies/default.yaml")
    assert code == 0 and out == "controller/policies/default.yaml: valid\n"


def test_no_daemon_is_a_one_line_error(tmp_path, capsys):
    code, out, err = run(capsys, "--socket", str(tmp_path / "c.sock"), "switches")
    assert code == 1
    assert err.startswith(f"gradctl: error: no controller daemon at {tmp_path / 'c.sock'}")
    code, out, err = run(capsys, "--socket", str(tmp_path / "c.sock"), "--direct", "switches")
    assert (code, err) == (1, "gradctl: error: --direct needs --topology and --p4info\n")


def test_policy_refuses_bad_control_law_fields(capsys, tmp_path):
    bad = json.loads(json.dumps(TWO_JOBS))
    bad["jobs"][0]["pcn"]["floor"] = 50
    policy = tmp_path / "bad.yaml"
    policy.write_text(yaml.safe_dump(bad))
    code, _, err = run(capsys, "policy", "apply", str(policy), "--check")
    assert code == 1 and "jobs[0].pcn.floor: must not exceed the ceiling 40, got 50" in err
    bad["jobs"][0]["pcn"]["floor"] = 5
    bad["jobs"][1]["early_close"] = "sometimes"
    policy.write_text(yaml.safe_dump(bad))
    code, _, err = run(capsys, "policy", "apply", str(policy), "--check")
    assert code == 1 and "jobs[1].early_close: must be one of telemetry, adaptive, fixed" in err
