"""Policy epochs survive a restart of the real controller daemon (four test P4Runtime
switches): the restarted daemon serves the epoch a job's hosts follow and numbers the next
change after it, so no host sees an epoch go backwards."""
from __future__ import annotations

import json

import pytest
from support.controller_daemon import Network, run_gradctl, stop_daemon

from controller import api

POLICY = "controller/policies/default.yaml"


@pytest.fixture
def net(tmp_path):
    network = Network(tmp_path)
    yield network
    network.stop()


def _view_epoch(net: Network) -> tuple[int, int]:
    view = api.call(net.socket, "job.policy", {"job": 1, "layers": 2})
    return view["epoch"], view["wire_epoch"]


def _change(net: Network, bound: str) -> None:
    done = run_gradctl("--socket", str(net.socket), "policy", "set", "--job", "1",
                       "--layers", "0-3", "--loss-bound", bound)
    assert done.code == 0, done


def test_a_restarted_daemon_goes_on_from_its_epochs(net):
    seen = []
    proc = net.start_daemon("--policy", POLICY)
    try:
        seen.append(_view_epoch(net))
        _change(net, "0.05")
        seen.append(_view_epoch(net))
        _change(net, "0.08")
        seen.append(_view_epoch(net))
    finally:
        stop_daemon(proc)
    saved = json.loads(net.state.read_text())["epochs"]["1"]
    assert saved["epoch"] == 3
    assert [h["epoch"] for h in saved["history"]] == [1, 2, 3]
    assert [h["by"] for h in saved["history"]][1:] == ["operator", "operator"]

    proc = net.start_daemon("--policy", POLICY)   # the same flags again: the state file rules
    try:
        seen.append(_view_epoch(net))
        _change(net, "0.06")
        seen.append(_view_epoch(net))
    finally:
        stop_daemon(proc)
    assert [epoch for epoch, _ in seen] == [1, 2, 3, 3, 4]
    assert [wire for _, wire in seen] == [1, 2, 3, 3, 4]
    history = json.loads(net.state.read_text())["epochs"]["1"]["history"]
    assert [h["epoch"] for h in history] == [1, 2, 3, 4]
