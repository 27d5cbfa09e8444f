"""Fixtures for the controller's unit tests: the data plane's P4Info and a test P4Runtime server."""
from __future__ import annotations

import pytest
from p4.config.v1 import p4info_pb2

from controller.entries import Codec
from controller.p4info import P4Info
from support.controller_topologies import diamond
from support.dataplane import compile_dataplane
from support.p4runtime_server import TestP4RuntimeServer


@pytest.fixture(scope="session")
def dataplane_p4info() -> p4info_pb2.P4Info:
    """The P4Info of the compiled `p4src` (compiled once per test session)."""
    return compile_dataplane().p4info


@pytest.fixture
def p4info_msg(dataplane_p4info):
    """A private copy of the data plane's P4Info (a test may change it)."""
    info = p4info_pb2.P4Info()
    info.CopyFrom(dataplane_p4info)
    return info


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
