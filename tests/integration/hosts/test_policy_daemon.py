"""The hosts' client of the controller's job policy against a real controller daemon (its
Network starts a P4Runtime server on 127.0.0.1: split from tests/unit/hosts/test_policy_client.py)."""
from __future__ import annotations

import subprocess
import sys

import pytest

from hosts.exchange.config import add_transport_arguments, config_from_args, following
from hosts.policy_client import PolicyClient
from hosts.transport.holes import HoleFill
from support.controller_daemon import REPO, Network, stop_daemon

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


def _config(*argv: str):
    import argparse
    ap = argparse.ArgumentParser()
    add_transport_arguments(ap)
    return config_from_args(ap.parse_args(list(argv)), 2, 1)


def test_view_of_a_real_daemon_and_the_config_it_makes(daemon):
    client = PolicyClient(daemon.socket, 3, 2)
    view = client.fetch()
    gen = view.at(0)
    assert (gen.epoch, gen.wire_epoch, view.effective_round, view.previous) == (1, 1, 0, None)
    assert gen.bounds.push == (0.05, 0.02) and gen.bounds.pull == (0.01, 0.02)
    assert gen.droppable == (frozenset(range(8)), frozenset(range(6)))
    config = following(_config("--controller", str(daemon.socket), "--job", "3"), gen, HoleFill.ZERO)
    assert config.bounds.push == (0.05, 0.02) and config.hole_fill is HoleFill.PREVIOUS
    assert config.send.policy_epoch == 1 and config.send.droppable == gen.droppable
    # the PS reports round 0; an operator change then applies from round 2, the rounds before
    # it keep the previous generation
    after = client.report(0, regime=None, delivered=[1.0, 1.0], violations=[0, 0])
    assert after.switch_push is None and after.at(5).epoch == 1
    subprocess.run([sys.executable, "-m", "controller.gradctl", "--socket", str(daemon.socket),
                    "policy", "set", "--job", "3", "--layers", "0-0", "--loss-bound", "0.3"],
                   cwd=REPO, check=True, capture_output=True)
    view = client.fetch()
    assert view.effective_round == 2
    assert view.at(1).epoch == 1 and view.at(1).bounds.push == (0.05, 0.02)
    assert view.at(2).epoch == 2 and view.at(2).wire_epoch == 2 and view.at(2).bounds.push == (0.3, 0.02)


@pytest.fixture
def daemon(tmp_path):
    net = Network(tmp_path)
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    proc = net.start_daemon("--policy", str(policy))
    yield net
    stop_daemon(proc)
    net.stop()
