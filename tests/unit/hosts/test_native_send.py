"""The native DATA frames of the send side (native/send_frames.cpp, hosts/transport/
data_frames.py) against the Python reference: the same bytes for every chunk and flags byte,
whatever the layers' values, layout and chunking; and a sender on each, driven with the same
inputs and clock over a lossy, reordering in-memory wire against the same receiver, sends the
same frames (bytes, address, TOS) at the same moments and decides the same: wake times,
statistics, counters, the receiver's reassembled values."""
from __future__ import annotations

import heapq

import numpy as np
import pytest

from hosts import wire
from hosts.transport import core as transport_core
from hosts.transport.bounds import LayerBounds, LossBudget
from hosts.transport.chunking import ChunkPlan
from hosts.transport.data_frames import PyFrames, is_native, native_frames, round_frames
from hosts.transport.port import Port
from hosts.transport.receiver import ReceiveOptions, RecvSession
from hosts.transport.sender import SendOptions, SendSession

needs_native = pytest.mark.skipif(not transport_core.native_available(),
                                  reason=f"native core not built: {transport_core.NATIVE_ERROR}")

JOB = 7


def _layers(plan: ChunkPlan, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = [rng.normal(0, 0.01, n).astype(np.float32) for n in plan.layer_sizes]
    specials = np.array([np.nan, -np.inf, np.inf, -0.0, 1e-45, -3.4e38], dtype=np.float32)
    out[0][:len(specials)] = specials[:plan.layer_sizes[0]]
    return out


@needs_native
@pytest.mark.parametrize("sizes,chunk", [([1000, 37, 5], 100), ([1000, 700, 64], [64, 50, 16]),
                                         ([1], 1), ([721], 360)])
def test_native_frames_are_the_reference_bytes(sizes: list[int], chunk) -> None:
    plan = ChunkPlan(sizes, chunk)
    layers = _layers(plan, 3)
    chunks = plan.split(layers)
    ref = PyFrames(chunks, JOB, 65535, 0xFFFFFFFF, 255)
    nat = native_frames(plan, layers, plan.classes(layers), JOB, 65535, 0xFFFFFFFF, 255)
    assert is_native(nat) and not is_native(ref)
    assert len(nat) == len(ref) == plan.total_chunks
    for idx in range(len(ref)):
        assert nat.size(idx) == ref.size(idx)
        for flags in (0, wire.FLAG_RETX | wire.FLAG_ACK_NOW, 0xFF):
            assert nat.frame(idx, flags) == ref.frame(idx, flags)


@needs_native
def test_native_frames_take_any_layout_and_keep_the_values_of_when_they_were_made() -> None:
    plan = ChunkPlan([60, 24], [7, 5])
    base = np.random.default_rng(1).normal(size=(2, 60)).astype(np.float64)
    layers = [base[0], np.asfortranarray(base[1, :24].reshape(4, 6))]   # float64, strided
    chunks = plan.split(layers)
    ref = PyFrames(chunks, JOB, 1, 2)
    nat = native_frames(plan, layers, plan.classes(layers), JOB, 1, 2)
    before = [nat.frame(i, 0) for i in range(len(nat))]
    assert before == [ref.frame(i, 0) for i in range(len(ref))]
    layers[0][:] = 0.0            # the sender's frames are a snapshot, as the reference's
    assert [nat.frame(i, 0) for i in range(len(nat))] == before


@needs_native
def test_bad_arguments_are_errors_not_crashes() -> None:
    plan = ChunkPlan([10], 4)
    layers = [np.zeros(10, dtype=np.float32)]
    chunks = plan.split(layers)
    nat = native_frames(plan, layers, plan.classes(layers), JOB, 0, 0)
    with pytest.raises(IndexError):
        nat.frame(len(chunks), 0)
    with pytest.raises(ValueError):
        nat.frame(0, 256)
    with pytest.raises(ValueError):
        native_frames(plan, layers, plan.classes(layers), 65536, 0, 0)
    with pytest.raises(ValueError):
        native_frames(plan, layers, plan.classes(layers)[:-1], JOB, 0, 0)
    from hosts.transport import _native
    with pytest.raises(TypeError):
        _native.DataFrames([np.zeros(10, dtype=np.int32)], [4], b"\0\0\0", JOB, 0, 0, 0)
    with pytest.raises(TypeError):
        _native.SendQueue().add_data(object(), 0, 0, ("127.0.0.1", 1), 0)
    queue = _native.SendQueue()
    with pytest.raises(TypeError):     # a mac that is not a MacKey: an error, nothing queued
        queue.add_data(nat, 0, 0, ("127.0.0.1", 1), 0, b"k" * 32)
    assert len(queue) == 0



def test_the_choice_of_frames_follows_the_core() -> None:
    plan = ChunkPlan([10], 4)
    layers = [np.zeros(10, dtype=np.float32)]
    frames, classes = round_frames(plan, layers, JOB, 0, 0, native=False)
    assert isinstance(frames, PyFrames) and classes == plan.classes(layers)
    native, native_classes = round_frames(plan, layers, JOB, 0, 0, native=True)
    assert is_native(native) == transport_core.native_available()
    assert native_classes == classes


def _exchange(core: str, seed: int, loss: float, options: SendOptions, pull: bool = False,
              mac: str = "off", plan: ChunkPlan | None = None) -> list:
    """A sender on `core` pushing (or pulling) a round to a Python receiver over an in-memory
    wire that loses, delays and reorders both ways; every datagram, every wake and the end state."""
    plan = plan or ChunkPlan([1000, 700, 64], [64, 50, 16])
    rng = np.random.default_rng(seed)
    grads = _layers(plan, seed)
    clock = [0.0]
    s_addr, r_addr = ("10.0.0.1", 5000), ("10.0.0.9", 6000)
    key = b"k" * 32 if mac != "off" else None
    s_port = Port(JOB, wire.PS_RANK if pull else 0, lambda: clock[0], mac_key=key, mac_mode=mac)
    r_port = Port(JOB, 0 if pull else wire.PS_RANK, lambda: clock[0], mac_key=key, mac_mode=mac)
    peer_rank = 0 if pull else wire.PS_RANK
    bounds = LayerBounds.fixed(plan.num_layers, 0.1, scope="tensor")
    sender = SendSession(s_port, r_addr, peer_rank, plan, grads, 3, pull=pull, options=options,
                         critical_layers=frozenset({2}),
                         budget=LossBudget.of(bounds.push, plan, bounds.scope), core=core)
    assert is_native(sender._frames) == (core == "native")
    receiver = RecvSession(r_port, plan, 3, pull=pull, senders=[wire.PS_RANK if pull else 0],
                           required=bounds.required_fraction(pull=pull),
                           options=ReceiveOptions(deadline=0.5, scope="tensor"))
    wire_q: list = []
    trace: list = []
    n = 0
    wake = {"s": 0.0, "r": 0.0}
    while not sender.done and clock[0] < 5.0:
        for port, src in ((s_port, s_addr), (r_port, r_addr)):
            for d in port.take():
                trace.append((round(clock[0], 9), src, d.data, d.addr, d.tos))
                if rng.random() < loss:
                    continue
                n += 1
                heapq.heappush(wire_q, (clock[0] + 0.0002 + float(rng.exponential(0.0003)), n,
                                        d, src))
        nxt = min(wake["s"], wake["r"], wire_q[0][0] if wire_q else float("inf"))
        if nxt == float("inf"):
            break
        clock[0] = max(clock[0], nxt)
        while wire_q and wire_q[0][0] <= clock[0]:
            _, _, d, src = heapq.heappop(wire_q)
            port, session = (r_port, receiver) if d.addr == r_addr else (s_port, sender)
            pkt = port.parse(d.data, src, d.tos)
            if pkt is not None:
                session.on_packet(pkt, clock[0])
        wake["s"] = sender.tick(clock[0]) if not sender.done else float("inf")
        wake["r"] = receiver.tick(clock[0]) if receiver.active else float("inf")
        trace.append(("wake", wake["s"], sender.stats.data_packets, sender.stats.bytes_sent))
    trace.append(("end", sender.done, vars(sender.stats), sender.fast_repairs,
                  sender.window_summary(), receiver.closed_by(), receiver.fractions(),
                  [v.tobytes() for s in receiver.senders.values() for v in s.buffer.values],
                  dict(s_port.counters), dict(r_port.counters)))
    return trace


@needs_native
@pytest.mark.parametrize("loss", [0.0, 0.05, 0.3])
@pytest.mark.parametrize("options", [
    SendOptions(window=10, cc="ecn", probe_interval=0.02),
    SendOptions(window=0, pace_pps=20_000, order="shuffle", seed=4, policy_epoch=9),
    SendOptions(window=4, cc="reno", plain=True),
    SendOptions(window=0, burst=3, order="shuffle", seed=2),
    SendOptions(window=30, cc="ecn", burst=4),
    SendOptions(window=10, cc="ecn", port_mbps=50.0),
], ids=["window-ecn", "paced-shuffle", "plain-reno", "burst-no-window", "burst-window",
        "port-paced"])
def test_a_native_sender_sends_and_decides_what_the_python_one_does(loss: float,
                                                                     options: SendOptions) -> None:
    for seed in range(4):
        py = _exchange("python", seed, loss, options)
        nat = _exchange("native", seed, loss, options)
        assert len(nat) == len(py)
        assert nat == py


@needs_native
@pytest.mark.parametrize("window", [0, 200])
def test_a_port_paced_native_sender_waits_for_its_port_as_the_python_one_does(window: int) -> None:
    """More DATA than the port's virtual queue holds (hosts/transport/port_pacer.py): the native
    send loop stops where the port is full and resumes when it drained, as the reference."""
    plan = ChunkPlan([30000, 3000], 64)
    options = SendOptions(window=window, cc="ecn", burst=400, port_mbps=10.0)
    for seed in range(2):
        native = _exchange("native", seed, 0.02, options, plan=plan)
        assert native == _exchange("python", seed, 0.02, options, plan=plan)
        assert native[-1][-2]["port_paced"] > 0     # the sender's counters: the port did stop it


@needs_native
@pytest.mark.parametrize("mac", ["all", "control"])
def test_signed_and_pulled_data_is_the_same_on_both(mac: str) -> None:
    options = SendOptions(window=10, cc="ecn")
    for seed in range(2):
        assert (_exchange("native", seed, 0.1, options, pull=True, mac=mac)
                == _exchange("python", seed, 0.1, options, pull=True, mac=mac))


def _ack(entries: list[tuple[int, int, int]]) -> bytes:
    return b"".join(wire.ACK_ENTRY.pack(layer, marks, seq) for layer, marks, seq in entries)


@needs_native
def test_every_ack_even_a_malformed_one_leaves_both_senders_in_the_same_state() -> None:
    """ACKs of every shape (duplicates, CE echoes, resent chunks, an entry naming no chunk in
    the middle, a payload of no whole entries, an empty one) applied to a sender on each core,
    which sent the same chunks (some twice): the same arrays, counters and timers after each."""
    plan = ChunkPlan([1000, 700, 64], [64, 50, 16])
    counts = plan.chunk_counts
    rng = np.random.default_rng(11)
    clock = [0.0]
    ports = {c: Port(JOB, 0, lambda: clock[0]) for c in ("python", "native")}
    senders = {c: SendSession(ports[c], ("10.0.0.9", 6000), wire.PS_RANK, plan, _layers(plan, 1), 3,
                              pull=False, options=SendOptions(window=40, cc="ecn"), core=c)
               for c in ports}
    payloads = [b"", b"\0" * 7, _ack([(3, 0, 0)]), _ack([(0, 1, 2), (0, 0, counts[0])]),
                _ack([(1, 0, 1), (9, 0, 0), (2, 1, 0)])]
    for step in range(150):
        clock[0] += float(rng.exponential(0.0005))
        if step % 3 == 0:
            payload = payloads[step // 3 % len(payloads)] if step % 9 == 0 else _ack(
                [(int(layer), int(rng.integers(0, 2)), int(rng.integers(0, counts[layer])))
                 for layer in rng.integers(0, 3, int(rng.integers(1, 12)))])
            hdr = wire.pack_header(wire.KIND_ACK, 0, JOB, wire.PS_RANK, wire.ALL_LAYERS, 3,
                                   payload_len=len(payload), tele_qdelay_us=int(rng.integers(0, 40_000)))
            for c, s in senders.items():
                pkt = ports[c].parse(hdr + payload, ("10.0.0.9", 6000), 0)
                s.on_packet(pkt, clock[0])
        if step % 40 == 20:     # a BITMAP-free resend: chunks queued again as a probe would
            for s in senders.values():
                s._requeue_missing(clock[0], force=True)
        wakes = {c: s.tick(clock[0]) for c, s in senders.items()}
        py, nat = senders["python"], senders["native"]
        assert wakes["python"] == wakes["native"]
        for name in ("arrived", "_outstanding", "_sent_at", "_tx", "_resent", "_lost", "_queued"):
            assert np.array_equal(getattr(py, name), getattr(nat, name)), name
        assert (py._in_flight, py._rack_sent, py._rack_rtt, py._rack_wake, py.rtt.srtt,
                py.window.cwnd) == (nat._in_flight, nat._rack_sent, nat._rack_rtt,
                                    nat._rack_wake, nat.rtt.srtt, nat.window.cwnd)
        assert dict(ports["python"].counters) == dict(ports["native"].counters)
        assert [d.data for d in ports["python"].take()] == [d.data for d in ports["native"].take()]
    assert ports["python"].counters["drop_corrupt"] >= 5
    assert py.arrived.all() and py.stats.retransmissions > 0
