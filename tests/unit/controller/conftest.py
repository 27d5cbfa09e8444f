"""Fixtures for the controller's unit tests: the data plane's P4Info, a codec, a topology."""
from __future__ import annotations

import pytest

from support.controller_fixtures import codec, dataplane_p4info, p4info_msg  # noqa: F401 (fixtures)
from support.controller_topologies import diamond


@pytest.fixture
def diamond_doc():
    return diamond()
