"""The unit tier builds no ns-3 simulation: a test that does belongs in tests/sim (the guard
below fails it at once, instead of compiling ns-3's C++ for minutes)."""
from __future__ import annotations

import pytest

from sim import engine


def _refuse_ns3(*args: object, **kwargs: object) -> None:
    raise AssertionError("a unit test built an ns-3 simulation: it belongs in tests/sim")


@pytest.fixture(autouse=True)
def _no_ns3(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine, "ns3", _refuse_ns3)
    monkeypatch.setattr(engine, "cpp", _refuse_ns3)
