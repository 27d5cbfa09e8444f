"""tests/unit/conftest.py's guards: a unit test that opens a network socket, a gRPC server or
channel, or imports ns-3 fails with a message naming the tier it belongs in; the AF_UNIX
sockets asyncio opens for its own event loop stay allowed."""
from __future__ import annotations

import asyncio
import socket
import sys

import grpc
import pytest


@pytest.mark.parametrize("family", [socket.AF_INET, socket.AF_INET6, socket.AF_PACKET])
def test_a_network_socket_is_refused(family, refusals):
    with pytest.raises(AssertionError, match="belongs in tests/integration"):
        socket.socket(family, socket.SOCK_DGRAM)
    assert len(refusals) == 1
    refusals.clear()


def test_grpc_servers_and_channels_are_refused(refusals):
    with pytest.raises(AssertionError, match="gRPC server: it belongs in tests/integration"):
        grpc.server(None)
    with pytest.raises(AssertionError, match="gRPC insecure channel"):
        grpc.insecure_channel("127.0.0.1:1")
    refusals.clear()


def test_unix_socketpairs_and_asyncio_loops_work(refusals):
    a, b = socket.socketpair()
    with a, b:
        a.sendall(b"x")
        assert b.recv(1) == b"x"

    async def answer() -> int:
        await asyncio.sleep(0)
        return 42

    assert asyncio.run(answer()) == 42         # the loop's self-pipe is an AF_UNIX socketpair
    assert refusals == []


def test_importing_ns3_is_refused(refusals):
    # asked of the guard's finder itself: another tier of the same session may have loaded them
    finder = next(f for f in sys.meta_path if type(f).__name__ == "_RefuseNs3Imports")
    for name in ("cppyy", "ns", "cppyy.gbl"):
        with pytest.raises(AssertionError, match="belongs in tests/sim"):
            finder.find_spec(name)
    assert finder.find_spec("json") is None
    refusals.clear()
