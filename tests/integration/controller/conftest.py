"""Fixtures for the controller's tests against a running P4Runtime server (127.0.0.1)."""
from __future__ import annotations

from collections.abc import Iterator

import pytest

from support.controller_fixtures import codec, dataplane_p4info, p4info_msg  # noqa: F401 (fixtures)
from support.p4runtime_server import TestP4RuntimeServer


@pytest.fixture
def p4rt_server() -> Iterator[TestP4RuntimeServer]:
    server = TestP4RuntimeServer().start()
    yield server
    server.stop()
