"""The state file is the truth after a restart (issue 18 point 4): gradctl changes survive a
restart of the real daemon, writes are atomic with the previous state kept, and a corrupt state
file stops the start with one line naming it, before anything is written to a switch."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from support.controller_daemon import REPO, Network, run_gradctl, stop_daemon

from controller import api
from controller.p4info import P4Info
from support.dataplane import compile_dataplane
from controller.statefile import backup_path, write_state



def _class_table() -> tuple[int, int]:
    """Id of the gradient class table and of its set_class action's push_bound_bp parameter."""
    info = P4Info(compile_dataplane().p4info)
    table = info.table("GradIngress.gradient_class")
    action = info.action("GradIngress.set_class")
    return table.preamble.id, next(p.id for p in action.params if p.name == "push_bound_bp")


@pytest.fixture
def net(tmp_path):
    network = Network(tmp_path)
    yield network
    network.stop()


def _bounds(net: Network) -> list:
    return [(c["layers"], c["loss_bound"]) for c in api.call(net.socket, "policy.show")["classes"]]


def test_restart_keeps_gradctl_changes(net):
    proc = net.start_daemon("--policy", "controller/policies/default.yaml")
    try:
        assert _bounds(net)[0] == ([0, 3], 0.1)
        done = run_gradctl("--socket", str(net.socket), "policy", "set", "--job", "1",
                           "--layers", "0-3", "--loss-bound", "0.05")
        assert done.code == 0, done
        done = run_gradctl("--socket", str(net.socket), "policy", "phase", "--job", "1",
                           "--round", "7")
        assert done.code == 0, done
    finally:
        stop_daemon(proc)
    saved = json.loads(net.state.read_text())
    assert saved["job_states"] == {"1": {"round": 7, "critical": False}}
    # the previous state (before the phase report) is kept beside it
    previous = json.loads(backup_path(net.state).read_text())
    assert previous["policy"] == saved["policy"] and previous["job_states"] == {}

    proc = net.start_daemon("--policy", "controller/policies/default.yaml")   # same flags again
    try:
        assert _bounds(net)[0] == ([0, 3], 0.05)
        shown = api.call(net.socket, "policy.show")
        assert shown["job_states"] == {"1": {"round": 7, "critical": False}}
    finally:
        out, err = stop_daemon(proc)
    assert "not applied: the state file" in err
    # the switch kept the changed bound (500 basis points), not the file's 110
    table_id, param_id = _class_table()
    bounds = sorted(int.from_bytes(p.value, "big") for e in net.servers["s1"].entities("table_entry")
                    if e.table_entry.table_id == table_id
                    for p in e.table_entry.action.action.params if p.param_id == param_id)
    assert 500 in bounds and 110 not in bounds


@pytest.mark.parametrize("content, expect", [
    (b"{not json", "is corrupt (not valid JSON"),
    (b"\xff\xfe", "is corrupt (not UTF-8 text"),
    (b"[]", "has the wrong shape (must be a JSON object"),
    (b'{"slots": "many"}', "has the wrong shape (slots: must be a list)"),
    (b'{"job_states": {"1": {"round": "x"}}}', "has the wrong shape (job_states.'1'"),
    (b'{"policy": {"jobs": [{"job": 1}]}}', "has the wrong shape (policy: jobs[0].layers"),
    (b'{"ecn_overrides": {"s1": {"2": [1]}}}', "has the wrong shape (ecn_overrides."),
    (b'{"colour": 1}', "has the wrong shape (unknown field"),
])
def test_corrupt_state_file_stops_the_start(net, content, expect):
    net.state.write_bytes(content)
    done = subprocess.run(
        [sys.executable, "-m", "controller.daemon", "--topology", str(net.topology),
         "--p4info", str(net.p4info), "--bmv2-json", str(net.bmv2), "--listen", str(net.socket),
         "--pid-file", str(net.dir / "ctl.pid"), "--state-file", str(net.state), "--no-queues",
         "--policy", "controller/policies/default.yaml", "--plaintext"],
        cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith(f"controller: error: state file {net.state} ") and expect in done.stderr
    assert net.state.read_bytes() == content                   # left as it was for the user
    assert all(not s.entities("table_entry") for s in net.servers.values())   # nothing written


def test_direct_mode_refuses_a_corrupt_state_file(net):
    net.state.write_text("[1, 2")
    done = run_gradctl("--socket", str(net.dir / "none.sock"), "--direct", "--plaintext", "--topology",
                       str(net.topology), "--p4info", str(net.p4info), "--state-file",
                       str(net.state), "policy", "show")
    assert done.code == 1 and done.stderr.count("\n") == 1 and "is corrupt" in done.stderr, done


def test_state_writes_are_atomic_and_keep_the_previous(tmp_path):
    path = tmp_path / "c.json"
    write_state(path, '{"a": 1}')
    assert path.read_text() == '{"a": 1}' and not backup_path(path).exists()
    write_state(path, '{"a": 2}')
    assert path.read_text() == '{"a": 2}' and backup_path(path).read_text() == '{"a": 1}'
    write_state(path, '{"a": 2}')                               # unchanged: the backup stays
    assert backup_path(path).read_text() == '{"a": 1}'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.json", "c.json.bak"]   # no temp left
