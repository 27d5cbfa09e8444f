"""Drive the join handshake from a plain UDP socket against a PS exchange running in this
process (the test pumps the PS between messages): how a test binds a socket to a rank."""
from __future__ import annotations

import socket
import time

from hosts import wire
from hosts.exchange.join import JoinClient


def hello(job: int, rank: int, payload: bytes) -> bytes:
    """A HELLO datagram of `rank` carrying `payload`."""
    return wire.pack_header(wire.KIND_HELLO, 0, job, rank, wire.ALL_LAYERS, 0, 0,
                            len(payload)) + payload


def answer(sock: socket.socket, ps, timeout: float = 2.0) -> bytes | None:
    """Let the in-process PS handle what waits, then the payload of its answer on `sock`."""
    end = time.monotonic() + timeout
    before = sock.gettimeout()
    sock.settimeout(0.05)
    try:
        while time.monotonic() < end:
            ps.mux.drain()
            try:
                return sock.recv(65535)[wire.HEADER_LEN:]
            except socket.timeout:
                continue
        return None
    finally:
        sock.settimeout(before)


def join_from(sock: socket.socket, ps, key: bytes, job: int, rank: int,
              fingerprint: int) -> JoinClient:
    """The whole handshake for `rank` from `sock`; the client (joined if the PS welcomed it)."""
    client = JoinClient(key, job, rank, fingerprint)
    sock.sendto(hello(job, rank, client.next_hello()), ps.endpoint.address)
    challenge = answer(sock, ps)
    assert challenge is not None, "the PS did not challenge a HELLO"
    proof = client.on_ack(challenge)
    sock.sendto(hello(job, rank, proof), ps.endpoint.address)
    welcome = answer(sock, ps)
    if welcome is not None:
        client.on_ack(welcome)
    return client
