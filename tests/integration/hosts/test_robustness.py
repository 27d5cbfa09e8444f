"""Malformed, foreign, stale and duplicate packets are dropped and counted; tensors stay intact."""
import random
import socket

import numpy as np
import pytest

from hosts import wire
from hosts.transport.chunking import ChunkPlan
from hosts.transport.endpoint import Endpoint
from hosts.transport.mux import Mux
from hosts.transport.receiver import ReceiveOptions, RecvSession

JOB = 3


@pytest.fixture
def setup():
    ep = Endpoint(("127.0.0.1", 0), JOB, wire.PS_RANK)
    peer = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    peer.bind(("127.0.0.1", 0))
    plan = ChunkPlan([64, 16], 8)
    mux = Mux(ep)
    session = RecvSession(ep, plan, 5, pull=False, senders=[0, 1], required=(1.0, 1.0),
                          options=ReceiveOptions(deadline=60.0))
    mux.add(session)
    mux.prune(5)
    yield ep, peer, plan, mux, session
    peer.close()
    ep.close()


def _chunk(plan, layer, seq, value, *, rank=0, round_=5, job=JOB):
    n = plan.length(layer, seq)
    payload = np.full(n, value, ">f4").tobytes()
    return wire.pack_header(wire.KIND_DATA, 0, job, rank, layer, round_, 0, len(payload), seq,
                            plan.offset(layer, seq)) + payload


def _deliver(ep, mux, peer, packets):
    for p in packets:
        peer.sendto(p, ep.address)
    seen = 0
    while seen < len(packets):
        got = ep.counters["packets_received"]
        for pkt in ep.receive(1.0):
            mux.dispatch(pkt, 0.0)
        if ep.counters["packets_received"] == got:
            break
        seen = ep.counters["packets_received"]


def test_each_kind_of_bad_packet_is_counted_and_ignored(setup):
    ep, peer, plan, mux, session = setup
    good = _chunk(plan, 0, 0, 1.0)
    bad = [
        good[:10],                                               # truncated header
        good[:-3],                                               # truncated payload
        good + b"zz",                                            # trailing garbage
        bytes([0x30]) + good[1:],                                # wrong version
        bytes([0x1F]) + good[1:],                                # unknown kind 15
        _chunk(plan, 0, 1, 1.0, job=JOB + 1),                    # foreign job
        _chunk(plan, 0, 1, 1.0, round_=4),                       # stale round
        _chunk(plan, 0, 1, 1.0, round_=99),                      # unknown future round
        _chunk(plan, 0, 1, 1.0, rank=7),                         # rank not in this job
        wire.pack_header(wire.KIND_DATA, 0, JOB, 0, 2, 5, 0, 32, 0, 0) + b"\0" * 32,  # layer 2
        _chunk(plan, 0, 1, float("nan")),                        # non-finite values
        wire.pack_header(wire.KIND_DATA, 0, JOB, 0, 0, 5, 0, 8, 1, 0) + b"\0" * 8,  # wrong offset
        wire.pack_header(wire.KIND_BITMAP, 0, JOB, 0, 0, 5),     # kind a receiver never gets
    ]
    _deliver(ep, mux, peer, [good, good] + bad)
    c = ep.counters
    assert c["drop_truncated"] == 2
    assert c["drop_corrupt"] == 2 + 1 + 2        # trailing, version+kind, layer+offset
    assert c["drop_foreign_job"] == 1
    assert c["drop_stale_round"] == 1
    assert c["drop_unknown_round"] == 1
    assert c["drop_foreign_rank"] == 1
    assert c["drop_nonfinite"] == 1
    assert c["drop_duplicate"] == 1
    assert c["drop_unexpected_kind"] == 1
    buf = session.senders[0].buffer
    assert buf.delivered_elems == [8, 0]
    assert np.all(buf.values[0][:8] == 1.0) and not buf.values[0][8:].any()
    assert not session.senders[1].buffer.delivered_elems[0]


def test_random_header_garbage_never_crashes_or_corrupts(setup):
    """Header bytes mutated at random (payloads stay 2.0): whatever is accepted must land
    exactly where a valid chunk belongs, so every delivered element is still 2.0."""
    ep, peer, plan, mux, session = setup
    rng = random.Random(11)
    good = [_chunk(plan, layer, seq, 2.0, rank=1) for layer in range(2)
            for seq in range(plan.chunk_counts[layer])]
    packets = []
    for _ in range(400):
        base = bytearray(rng.choice(good))
        for _ in range(rng.randint(1, 4)):
            base[rng.randrange(wire.HEADER_LEN)] = rng.randrange(256)
        if rng.random() < 0.3:
            base = base[:rng.randrange(len(base))]
        packets.append(bytes(base))
    _deliver(ep, mux, peer, packets)
    _deliver(ep, mux, peer, good)
    drops = sum(v for k, v in ep.counters.items() if k.startswith("drop_"))
    assert drops > 300
    for rank in (0, 1):
        buf = session.senders[rank].buffer
        for layer, (vals, mask) in enumerate(zip(buf.values, buf.delivered)):
            assert np.all(vals[mask] == 2.0)
            assert not vals[~mask].any()
            assert int(mask.sum()) == buf.delivered_elems[layer]
    assert session.senders[1].buffer.complete()


def test_tos_byte_reaches_the_receiver():
    ep = Endpoint(("127.0.0.1", 0), JOB, 0)
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        rx.bind(("127.0.0.1", 0))
        rx.setsockopt(socket.IPPROTO_IP, socket.IP_RECVTOS, 1)
        rx.settimeout(2)
        for tos in (wire.pcn_tos(start=True, threshold=10), wire.pcn_tos(ack=True),
                    wire.data_tos(2, True), wire.data_tos(6, False)):
            ep.send_control(wire.KIND_PCN_START, rx.getsockname(), 0, tos=tos)
            _, anc, _, _ = rx.recvmsg(2048, socket.CMSG_SPACE(1))
            got = [d[0] for level, kind, d in anc if kind == socket.IP_TOS]
            assert got == [tos]
    finally:
        rx.close()
        ep.close()


def test_packets_of_a_round_opened_later_are_kept_and_replayed(setup):
    ep, peer, plan, mux, session = setup
    _deliver(ep, mux, peer, [_chunk(plan, 0, 0, 4.0, round_=7), _chunk(plan, 0, 1, 4.0, round_=7)])
    assert ep.counters["early_round_buffered"] == 2
    later = RecvSession(ep, plan, 7, pull=False, senders=[0, 1], required=(1.0, 1.0),
                        options=ReceiveOptions(deadline=60.0))
    mux.add(later)
    assert later.senders[0].buffer.delivered_elems == [16, 0]
    assert session.senders[0].buffer.delivered_elems == [0, 0]
