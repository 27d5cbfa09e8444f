"""Guards that keep the unit tier fast and self-contained.

A unit test opens no network socket and builds no ns-3 simulation. A test that needs either
belongs in another tier: tests/integration (real sockets: servers, clients, switch processes) or
tests/sim (ns-3). The guards fail such a test at once with a message that names the tier,
instead of letting it bind ports or compile ns-3's C++ for minutes.

- Network sockets: an audit hook (``socket.__new__``) refuses AF_INET, AF_INET6 and AF_PACKET
  (raw frames on an interface) sockets while a test under tests/unit is set up, run or torn
  down, in any thread; gRPC's servers and channels (opened in its C core, which raises no audit
  event) are refused at their constructors.
  AF_UNIX sockets stay allowed: asyncio's event loops open a socketpair for their self-pipe,
  and a unit test may use one too.
- ns-3: ``sim.engine.ns3``/``cpp`` are replaced, and an import of ``cppyy`` or ``ns`` (the ns-3
  wheel) that is not already loaded fails.

Subprocesses are not followed: a unit test may run a command that exits on bad input, not one
that serves on a port.
"""
from __future__ import annotations

import socket
import sys
from collections.abc import Generator
from typing import Any

import grpc
import grpc.aio
import pytest

from sim import engine

NS3_MODULES = ("cppyy", "ns")
NETWORK_FAMILIES = {socket.AF_INET: "AF_INET", socket.AF_INET6: "AF_INET6", socket.AF_PACKET: "AF_PACKET"}
GRPC_CONSTRUCTORS = ((grpc, "server"), (grpc, "insecure_channel"), (grpc, "secure_channel"),
                     (grpc.aio, "server"), (grpc.aio, "insecure_channel"), (grpc.aio, "secure_channel"))


class _Guard:
    """What the current unit test has done that the tier forbids (active only during one)."""

    def __init__(self) -> None:
        self.active = False
        self.refused: list[str] = []

    def refuse(self, what: str, tier: str) -> AssertionError:
        message = f"a unit test {what}: it belongs in {tier}"
        self.refused.append(message)
        return AssertionError(message)


GUARD = _Guard()


def _audit(event: str, args: tuple[Any, ...]) -> None:
    # audit hooks are process-wide and cannot be removed: this one only acts during a unit test
    if event == "socket.__new__" and GUARD.active:
        family = NETWORK_FAMILIES.get(args[1])
        if family is not None:
            raise GUARD.refuse(f"opened an {family} socket", "tests/integration")


sys.addaudithook(_audit)


class _RefuseNs3Imports:
    """A meta-path finder that fails imports of ns-3 and cppyy during a unit test."""

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if GUARD.active and name.split(".")[0] in NS3_MODULES:
            raise GUARD.refuse(f"imported {name} (ns-3)", "tests/sim")
        return None


sys.meta_path.insert(0, _RefuseNs3Imports())


def _refuse_ns3(*args: object, **kwargs: object) -> None:
    raise GUARD.refuse("built an ns-3 simulation", "tests/sim")


def _refuse_grpc(name: str) -> Any:
    def refused(*args: object, **kwargs: object) -> None:
        raise GUARD.refuse(f"opened a gRPC {name.replace('_', ' ')}", "tests/integration")
    return refused


@pytest.fixture(autouse=True)
def _no_ns3_no_grpc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine, "ns3", _refuse_ns3)
    monkeypatch.setattr(engine, "cpp", _refuse_ns3)
    for module, name in GRPC_CONSTRUCTORS:
        monkeypatch.setattr(module, name, _refuse_grpc(name))


@pytest.fixture
def refusals() -> list[str]:
    """What the guards refused in this test so far; a test that provokes a refusal on purpose
    clears it, or the test fails."""
    return GUARD.refused


def _guarded(item: pytest.Item, phase: str) -> Generator[None, None, None]:
    GUARD.active = True
    GUARD.refused.clear()
    try:
        result = yield
    finally:
        GUARD.active = False
    if GUARD.refused:
        # a refusal in a thread, or one the code under test caught, still fails the test
        pytest.fail(f"{item.nodeid} ({phase}): {GUARD.refused[0]}", pytrace=False)
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, None, None]:
    return (yield from _guarded(item, "setup"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    return (yield from _guarded(item, "call"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Generator[None, None, None]:
    return (yield from _guarded(item, "teardown"))
