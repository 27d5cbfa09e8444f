"""Fixtures the controller's unit and integration tests share: the data plane's P4Info and a
codec over it. A tier's conftest imports the ones it needs (pytest finds them by name there)."""
from __future__ import annotations

import pytest
from p4.config.v1 import p4info_pb2

from controller.entries import Codec
from controller.p4info import P4Info
from support.dataplane import compile_dataplane


@pytest.fixture(scope="session")
def dataplane_p4info() -> p4info_pb2.P4Info:
    """The P4Info of the compiled `p4src` (compiled once per test session and tier)."""
    return compile_dataplane().p4info


@pytest.fixture
def p4info_msg(dataplane_p4info: p4info_pb2.P4Info) -> p4info_pb2.P4Info:
    """A private copy of the data plane's P4Info (a test may change it)."""
    info = p4info_pb2.P4Info()
    info.CopyFrom(dataplane_p4info)
    return info


@pytest.fixture
def codec(p4info_msg: p4info_pb2.P4Info) -> Codec:
    return Codec(P4Info(p4info_msg))
