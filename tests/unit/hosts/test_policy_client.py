"""The hosts' client of the controller's job policy: one-line errors when nothing (or nonsense)
answers, and the agents' --controller flag (the view of a real daemon:
tests/integration/hosts/test_policy_daemon.py)."""
from __future__ import annotations

import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from hosts.errors import ConfigError, ControllerUnreachable
from hosts.exchange.job_key import create_key_file
from hosts.exchange.config import add_transport_arguments, config_from_args
from hosts.policy_client import PolicyClient
from support.controller_daemon import REPO

POLICY = """version: 1
jobs:
  - job: 3
    hole_fill: previous
    layers:
      - range: [0, 0]
        loss_bound: 0.05
        pull_bound: 0.01
      - range: [1, 1]
        mag_classes: [0, 5]
        loss_bound: 0.02
"""


def test_no_controller_is_one_clear_line(tmp_path):
    client = PolicyClient(tmp_path / "none.sock", 1, 2)
    with pytest.raises(ControllerUnreachable) as exc:
        client.fetch()
    assert str(exc.value) == (f"no controller at {tmp_path / 'none.sock'} (is the controller daemon "
                              "running? drop --controller to use the flags)")
    stale = tmp_path / "stale.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.bind(str(stale))          # bound, never listening: what a dead daemon leaves
    with pytest.raises(ControllerUnreachable, match="is not running"):
        PolicyClient(stale, 1, 2).fetch()


def _one_answer_server(path: Path, answer: bytes) -> threading.Thread:
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(str(path))
    srv.listen(1)

    def serve() -> None:
        conn, _ = srv.accept()
        with conn:
            conn.recv(1 << 16)
            conn.sendall(answer)
        srv.close()

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    return t


@pytest.mark.parametrize("answer, message", [
    (b"not json\n", "sent a malformed answer"),
    (b'{"ok": false, "error": "no job 1 in the current policy"}\n',
     "refused job.policy for job 1: no job 1 in the current policy"),
    (b'{"ok": true, "result": {"epoch": 1}}\n', "sent a malformed job view"),
    (b'{"ok": true, "result": {"epoch": 1, "wire_epoch": 1, "effective_round": 0, '
     b'"push_bounds": [2.0, 0], "pull_bounds": [0, 0], "droppable": [[], []]}}\n',
     "sent a malformed job view"),
])
def test_bad_answers_are_one_line_errors(tmp_path, answer, message):
    path = tmp_path / "fake.sock"
    t = _one_answer_server(path, answer)
    with pytest.raises(ControllerUnreachable, match=message):
        PolicyClient(path, 1, 2, timeout=5).fetch()
    t.join(5)


def _config(*argv: str):
    import argparse
    ap = argparse.ArgumentParser()
    add_transport_arguments(ap)
    return config_from_args(ap.parse_args(list(argv)), 2, 1)


@pytest.mark.slow
def test_flags_and_controller(tmp_path):
    with pytest.raises(ConfigError, match="--bound, --pull-bound: the controller's policy gives the bounds"):
        _config("--controller", "x.sock", "--bound", "0.1", "--pull-bound", "0.01")
    with pytest.raises(ConfigError, match="--controller needs --transport ltp"):
        _config("--controller", "x.sock", "--transport", "mlt")
    assert _config("--bound", "0.2").bounds.push == (0.2, 0.2)   # flags alone: as before
    assert _config().bounds.push == (0.1, 0.1)
    create_key_file(str(tmp_path / "job.key"))
    done = subprocess.run([sys.executable, "-m", "hosts.worker", "--rank", "0", "--workers", "1",
                           "--ps", "127.0.0.1", "--port", "0", "--controller", str(tmp_path / "no.sock"),
                           "--job-key", str(tmp_path / "job.key")],
                          cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"hosts.worker: error: no controller at {tmp_path / 'no.sock'} (is the controller daemon "
        "running? drop --controller to use the flags)"]
