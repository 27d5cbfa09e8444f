"""The endpoint's batched socket I/O (sendmmsg / recvmmsg, native/batch_io.cpp) puts the same
datagrams on the wire and hands the driver the same packets as the per-datagram path, on real
loopback sockets: the same bytes, addresses and TOS values, in the same order, and the same
counters."""
import socket
import struct
import threading

import numpy as np
import pytest

from hosts import wire
from hosts.transport import mac_impl, packet_mac
from hosts.transport.bounds import LossBudget
from hosts.transport.chunking import ChunkPlan
from hosts.transport.data_frames import round_frames
from hosts.transport.endpoint import Endpoint, default_io
from hosts.transport.mux import Mux
from hosts.transport.receiver import ReceiveOptions, RecvSession
from hosts.transport.sender import SendOptions, SendSession, new_window

pytestmark = pytest.mark.skipif(default_io() != "batch",
                                reason="the native extension (batched I/O) is not built")

JOB = 11


def _raw_receiver() -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    s.setsockopt(socket.IPPROTO_IP, socket.IP_RECVTOS, 1)
    s.bind(("127.0.0.1", 0))
    s.settimeout(2.0)
    return s


def _drain_raw(s: socket.socket, count: int) -> list[tuple[bytes, int]]:
    """(data, tos) of the next `count` datagrams on `s`."""
    out = []
    for _ in range(count):
        data, anc, _, _ = s.recvmsg(65535, socket.CMSG_SPACE(4))
        tos = next((d[0] for lvl, kind, d in anc if lvl == socket.IPPROTO_IP and kind == socket.IP_TOS), 0)
        out.append((data, tos))
    s.settimeout(0.05)
    try:
        extra = s.recv(65535)
    except TimeoutError:
        extra = None
    s.settimeout(2.0)
    assert extra is None, "more datagrams arrived than were sent"
    return out


def _frames(n: int) -> list[tuple[int, bytes, int]]:
    """(receiver index, bytes, TOS) of `n` datagrams: sizes from a bare header to 8 kB, the TOS
    changing nearly every datagram (as gradlane's per chunk), two destinations interleaved."""
    rng = np.random.default_rng(5)
    out = []
    for i in range(n):
        size = int(rng.integers(0, 8192)) if i % 7 else 0
        payload = rng.integers(0, 256, size, dtype=np.uint8).tobytes()
        hdr = wire.pack_header(wire.KIND_DATA, 0, JOB, 0, i % 3, i, 0, len(payload), i, 0)
        tos = (wire.data_tos(i % 8, i % 4 == 0) if i % 5 else wire.CONTROL_TOS) if i % 11 else 0
        out.append((int(rng.integers(0, 2)), hdr + payload, tos))
    return out


def _send_all(io: str, frames, too_big_at: int) -> tuple[list[list[tuple[bytes, int]]], dict]:
    receivers = [_raw_receiver(), _raw_receiver()]
    tx = Endpoint(("127.0.0.1", 0), JOB, 0, io=io)
    assert tx.io == io
    try:
        for i, (dest, data, tos) in enumerate(frames):
            if i == too_big_at:   # the kernel refuses it (EMSGSIZE) in the middle of a batch
                tx.send(b"\0" * 70000, receivers[0].getsockname(), 0)
            tx.send(data, receivers[dest].getsockname(), tos)
        tx.flush()
        counts = [sum(1 for f in frames if f[0] == k) for k in range(2)]
        seen = [_drain_raw(r, c) for r, c in zip(receivers, counts)]
        return seen, dict(tx.counters)
    finally:
        tx.close()
        for r in receivers:
            r.close()


def test_batched_sending_puts_the_same_datagrams_on_the_wire():
    frames = _frames(600)    # more than one sendmmsg of 256
    single, single_counters = _send_all("single", frames, too_big_at=300)
    batch, batch_counters = _send_all("batch", frames, too_big_at=300)
    assert batch == single
    for k in range(2):
        assert single[k] == [(data, tos) for dest, data, tos in frames if dest == k]
    assert batch_counters == single_counters
    assert single_counters["send_error"] == 1 and single_counters["packets_sent"] == 600


def test_a_batch_endpoint_sends_nothing_before_its_flush():
    rx = _raw_receiver()
    tx = Endpoint(("127.0.0.1", 0), JOB, 0, io="batch")
    try:
        tx.send_control(wire.KIND_PROBE, rx.getsockname(), 3)
        rx.settimeout(0.05)
        with pytest.raises(TimeoutError):
            rx.recv(65535)
        tx.close()    # closing flushes
        rx.settimeout(2.0)
        assert wire.unpack_header(rx.recv(65535)).round == 3
    finally:
        tx.close()
        rx.close()


def _raw_sends(dest: tuple[str, int]) -> list[tuple[bytes, int]]:
    """What a scripted peer sends: valid packets of every size, junk, a foreign job."""
    out = [(data, tos) for _, data, tos in _frames(300)]
    out.insert(10, (b"\x01\x02junk", 0))
    out.insert(20, (wire.pack_header(wire.KIND_PROBE, 0, JOB + 1, 0, 0, 1), wire.CONTROL_TOS))
    return out


def _receive_all(io: str) -> tuple[list, dict, tuple[str, int]]:
    rx = Endpoint(("127.0.0.1", 0), JOB, wire.PS_RANK, io=io)
    peer = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    peer.bind(("127.0.0.1", 0))
    try:
        sends = _raw_sends(rx.address)
        for data, tos in sends:
            peer.sendmsg([data], [(socket.IPPROTO_IP, socket.IP_TOS, struct.pack("i", tos))], 0,
                       rx.address)
        got: list = []
        while rx.counters["packets_received"] < len(sends):
            batch = rx.receive(2.0)
            if not batch and rx.counters["packets_received"] < len(sends):
                assert rx.counters["packets_received"] > 0, "datagrams lost on loopback"
            got += batch
        return got, dict(rx.counters), peer.getsockname()
    finally:
        rx.close()
        peer.close()


def test_batched_receiving_hands_over_the_same_packets():
    single, single_counters, single_peer = _receive_all("single")
    batch, batch_counters, batch_peer = _receive_all("batch")
    assert single_counters == batch_counters
    assert single_counters["drop_foreign_job"] == 1 and single_counters["packets_received"] == 302
    strip = [(p.header, p.payload, p.tos) for p in single]
    assert strip == [(p.header, p.payload, p.tos) for p in batch]
    assert {p.addr for p in single} == {single_peer} and {p.addr for p in batch} == {batch_peer}
    assert len({p.tos for p in batch}) > 3


def _push(io: str) -> tuple[list[np.ndarray], dict, dict]:
    """One push of three layers through the agents' loop (Mux), sender and receiver both on
    `io`: what the receiver reassembled, and both sides' counters."""
    plan = ChunkPlan([5000, 3000, 700], 360)
    rng = np.random.default_rng(3)
    layers = [rng.normal(0, 1, n).astype(np.float32) for n in plan.layer_sizes]
    rx = Endpoint(("127.0.0.1", 0), JOB, wire.PS_RANK, io=io)
    tx = Endpoint(("127.0.0.1", 0), JOB, 0, io=io)
    rmux, smux = Mux(rx), Mux(tx)
    options = SendOptions(window=10)
    session = RecvSession(rx, plan, 0, pull=False, senders=[0], required=(1.0, 1.0, 1.0),
                          options=ReceiveOptions(deadline=10.0, absent_timeout=10.0))
    rmux.add(session)
    sender = SendSession(tx, rx.address, wire.PS_RANK, plan, layers, 0, pull=False,
                         options=options, window=new_window(options),
                         budget=LossBudget.of((1.0, 1.0, 1.0), plan, "tensor"))
    smux.add(sender)
    thread = threading.Thread(target=rmux.run, args=(lambda: session.done, 10.0))
    thread.start()
    try:
        smux.run(lambda: sender.done, timeout=10.0)
    finally:
        thread.join()
        got = [v.copy() for v in session.senders[0].buffer.values]
        rx.close()
        tx.close()
    assert all(np.array_equal(g, v) for g, v in zip(got, layers))
    return got, dict(rx.counters), dict(tx.counters)


def test_a_push_over_batched_endpoints_delivers_what_single_ones_do():
    single, _, tx_single = _push("single")
    batch, _, tx_batch = _push("batch")
    assert all(np.array_equal(a, b) for a, b in zip(single, batch))
    # the ACKs' timing may differ (so may resends on a loaded machine), the first pass not
    assert min(tx_batch["data_packets_sent"], tx_single["data_packets_sent"]) >= 25   # 14 + 9 + 2 chunks


def test_what_a_step_queued_goes_out_when_the_loop_ends_by_an_error():
    """A dispatch that sends and then raises: the batched frames still leave, as the single
    path's had at once."""
    rx = _raw_receiver()
    peer = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    ep = Endpoint(("127.0.0.1", 0), JOB, wire.PS_RANK, io="batch")
    mux = Mux(ep)

    def answer_then_fail(pkt, now):
        ep.send_control(wire.KIND_STOP, rx.getsockname(), pkt.header.round)
        raise RuntimeError("the step failed")

    mux.handlers[wire.KIND_PROBE] = answer_then_fail
    try:
        peer.sendto(wire.pack_header(wire.KIND_PROBE, 0, JOB, 0, 0, 4), ep.address)
        with pytest.raises(RuntimeError):
            mux.run(lambda: False, timeout=5.0)
        assert wire.unpack_header(rx.recv(65535)).kind == wire.KIND_STOP
    finally:
        ep.close()
        peer.close()
        rx.close()


def _first_pass(io: str, core: str, mac: str, dest: tuple[str, int], probe_to: tuple[str, int]
                ) -> dict:
    """One sender's whole first pass (three layers, no window) on an endpoint with `io` and
    DATA frames of `core`, a PROBE to another address queued between its bursts; the counters."""
    plan = ChunkPlan([5000, 3000, 700], [360, 250, 64])
    rng = np.random.default_rng(8)
    layers = [rng.normal(0, 1, n).astype(np.float32) for n in plan.layer_sizes]
    tx = Endpoint(("127.0.0.1", 0), JOB, 0, io=io, mac_key=b"m" * 32, mac_mode=mac)
    try:
        sender = SendSession(tx, dest, wire.PS_RANK, plan, layers, 2, pull=False,
                             options=SendOptions(burst=8), critical_layers=frozenset({1}), core=core)
        now = tx.clock()
        while sender.stats.data_packets < plan.total_chunks:
            sender.tick(now)
            tx.send_control(wire.KIND_PROBE, probe_to, 2)
        tx.flush()
        return dict(tx.counters)
    finally:
        tx.close()


@pytest.mark.parametrize("mac", ["control", "all"])
def test_native_data_frames_queued_in_a_batch_go_out_as_the_python_ones_do(mac: str):
    """DATA frames built in the batch endpoint's send queue (native/send_frames.cpp), mixed with
    datagrams the port framed in Python, reach the wire as the reference sender's do on the
    single path: the same bytes, TOS and order at each destination, the same counters."""
    seen, counters = [], []
    for io, core in (("single", "python"), ("batch", "native")):
        data_rx, probe_rx = _raw_receiver(), _raw_receiver()
        try:
            c = _first_pass(io, core, mac, data_rx.getsockname(), probe_rx.getsockname())
            probes = c["packets_sent"] - c["data_packets_sent"]
            seen.append((_drain_raw(data_rx, c["data_packets_sent"]), _drain_raw(probe_rx, probes)))
            counters.append(c)
        finally:
            data_rx.close()
            probe_rx.close()
    assert seen[1] == seen[0]
    assert counters[1] == counters[0]
    assert counters[0]["data_packets_sent"] == 14 + 12 + 11
    assert len({tos for _, tos in seen[0][0]}) > 1      # the TOS changes from chunk to chunk


@pytest.mark.skipif(not mac_impl.native_available(), reason="native MAC not built")
def test_the_send_queue_signs_data_as_the_reference_does() -> None:
    """DATA built and signed in the send queue (`--packet-mac all` on the batch path) is the
    reference frame with the reference trailer; the length returned is the frame's."""
    from hosts.transport import _native
    plan = ChunkPlan([1000, 37, 5], [360, 16, 8])
    layers = [np.random.default_rng(3).normal(0, 1, n).astype(np.float32)
              for n in plan.layer_sizes]
    nat, _ = round_frames(plan, layers, JOB, 1, 9, native=True)
    ref, _ = round_frames(plan, layers, JOB, 1, 9, native=False)
    key = packet_mac.packet_key(b"j" * 32)
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        rx.bind(("127.0.0.1", 0))
        rx.settimeout(5.0)
        queue = _native.SendQueue()
        lengths = [queue.add_data(nat, i, wire.FLAG_PULL, rx.getsockname(), 0,
                                  mac_impl.make(key, "native")) for i in range(len(nat))]
        sent, _, blocked, errors = queue.flush(tx.fileno())
        assert (sent, blocked, errors) == (len(nat), 0, 0)
        got = [rx.recv(65535) for _ in range(len(nat))]
    finally:
        rx.close()
        tx.close()
    want = [ref.frame(i, wire.FLAG_PULL) for i in range(len(ref))]
    assert lengths == [len(w) for w in want]
    assert got == [packet_mac.sign(key, w) for w in want]
