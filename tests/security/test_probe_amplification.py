"""PROBEs do not amplify (issue 25 point 2): a flood of PROBEs in a sender's name (its address
spoofed) is answered at a bounded rate, and never with more bytes than the PROBEs carried times
a small factor. Real UDP sockets on loopback; the PROBEs come from the sender's own socket, as
spoofed ones would appear to the receiver."""
from __future__ import annotations

import socket
import time

import pytest

from hosts import wire
from hosts.transport.chunking import ChunkPlan
from hosts.transport.endpoint import Endpoint
from hosts.transport.probe_answer import ANSWER_BURST, ANSWER_FACTOR, ANSWERS_PER_SECOND
from hosts.transport.receiver import ReceiveOptions, RecvSession

JOB = 3
PLAN = ChunkPlan([64] * 8, 8)      # eight layers: eight BITMAPs per fully answered PROBE
PROBES = 200


@pytest.fixture
def receiver():
    ep = Endpoint(("127.0.0.1", 0), JOB, wire.PS_RANK)
    session = RecvSession(ep, PLAN, 0, pull=False, senders=[0], required=(1.0,) * 8,
                          options=ReceiveOptions(deadline=60.0))
    yield ep, session
    ep.close()


@pytest.fixture
def victim():
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    yield sock
    sock.close()


def _flood(ep: Endpoint, session: RecvSession, victim: socket.socket, padding: int) -> tuple[int, int, float]:
    """PROBEs of rank 0 from the victim's address; (bytes sent, bytes answered, seconds)."""
    probe = wire.pack_header(wire.KIND_PROBE, 0, JOB, 0, wire.ALL_LAYERS, 0,
                             payload_len=padding) + bytes(padding)
    start = time.monotonic()
    for _ in range(PROBES):
        victim.sendto(probe, ep.address)
    handled = 0
    while handled < PROBES and time.monotonic() - start < 10:
        for pkt in ep.receive(0.1):
            session.on_packet(pkt, time.monotonic())
            handled += 1
    elapsed = time.monotonic() - start
    victim.settimeout(0.2)
    answered = 0
    try:
        while True:
            answered += len(victim.recv(65535))
    except socket.timeout:
        pass
    return PROBES * len(probe), answered, elapsed


def test_a_probe_flood_in_a_senders_name_is_not_amplified(receiver, victim):
    ep, session = receiver
    sent, answered, elapsed = _flood(ep, session, victim, padding=0)
    assert answered <= ANSWER_FACTOR * sent
    answers = PROBES - ep.counters["drop_probe_rate"]
    assert answers <= ANSWER_BURST + ANSWERS_PER_SECOND * elapsed + 1
    assert ep.counters["drop_probe_rate"] > 0


def test_large_probes_do_not_buy_more_than_their_size(receiver, victim):
    """Padding pays for the answer, but only up to the factor; garbage is no padding."""
    ep, session = receiver
    sent, answered, _ = _flood(ep, session, victim, padding=1400)
    assert answered <= ANSWER_FACTOR * sent
    junk = wire.pack_header(wire.KIND_PROBE, 0, JOB, 0, wire.ALL_LAYERS, 0, payload_len=4) + b"junk"
    victim.sendto(junk, ep.address)
    time.sleep(0.05)
    for pkt in ep.receive(0.1):
        session.on_packet(pkt, time.monotonic())
    assert ep.counters["drop_corrupt"] == 1
