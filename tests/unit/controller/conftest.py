"""Fixtures for the controller's unit tests: a P4Info of the data plane and a test P4Runtime server."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

import ctl_p4info  # noqa: E402
from ctl_p4rt_server import TestP4RuntimeServer  # noqa: E402
from ctl_topologies import diamond  # noqa: E402

from controller.entries import Codec  # noqa: E402
from controller.p4info import P4Info  # noqa: E402


@pytest.fixture
def p4info_msg():
    return ctl_p4info.build()


@pytest.fixture
def codec(p4info_msg):
    return Codec(P4Info(p4info_msg))


@pytest.fixture
def p4rt_server():
    server = TestP4RuntimeServer().start()
    yield server
    server.stop()


@pytest.fixture
def diamond_doc():
    return diamond()
