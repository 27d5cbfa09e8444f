"""The native receive core (native/, hosts/transport/native_receiver.py) against the Python
reference (hosts/transport/receiver.py): both are driven with the same datagrams and the same
clock, and after every step they must have sent the same frames (bytes, address, TOS), counted
the same events, returned the same wake time and hold the same state; at the end the same
reassembled values. The inputs cover loss, duplicates, reordering, resends, CE marks, ACK_NOW,
telemetry, PROBEs, late DATA, outside closes, silent senders and malformed packets. A second
test runs the Python sender against each core over a lossy, reordering in-memory wire: the
whole exchange, both directions, must be the same frame for frame.
"""
from __future__ import annotations

import heapq

import numpy as np
import pytest

from hosts import wire
from hosts.errors import PeerTimeout
from hosts.transport import core as transport_core
from hosts.transport.bounds import LayerBounds, LossBudget
from hosts.transport.chunking import ChunkPlan
from hosts.transport.port import Port
from hosts.transport.receiver import ReceiveOptions, RecvSession
from hosts.transport.sender import SendOptions, SendSession

needs_native = pytest.mark.skipif(not transport_core.native_available(),
                                  reason=f"native core not built: {transport_core.NATIVE_ERROR}")

JOB = 7
ADDRS = {0: ("10.0.0.1", 5000), 1: ("10.0.0.2", 5001), 2: ("10.0.0.3", 5002)}


class World:
    """One receive session on one core, with its own port and the shared clock."""

    def __init__(self, core: str, plan: ChunkPlan, clock: list[float], *, pull: bool,
                 senders: list[int], required: tuple[float, ...], options: ReceiveOptions) -> None:
        self.port = Port(JOB, wire.PS_RANK, lambda: clock[0])
        self.session = transport_core.recv_session(
            self.port, plan, 3, pull=pull, senders=senders, required=required, options=options,
            core=core)
        assert isinstance(self.session, RecvSession)

    def feed(self, data: bytes, addr: tuple[str, int], tos: int, now: float) -> None:
        pkt = self.port.parse(data, addr, tos)
        if pkt is not None:
            self.session.on_packet(pkt, now)

    def tick(self, now: float) -> object:
        try:
            return self.session.tick(now)
        except PeerTimeout as exc:
            return f"PeerTimeout: {exc}"

    def observe(self) -> dict:
        """Everything observable after a step (the frames sent since the last one included)."""
        s = self.session
        return {
            "frames": [(d.data, d.addr, d.tos) for d in self.port.take()],
            "counters": dict(self.port.counters),
            "done": s.done, "active": s.active, "finished": s.finished,
            "closed_by": s.closed_by(), "fractions": s.fractions(),
            "telemetry": s.telemetry.as_dict(), "max_qdepth": s.max_qdepth,
            "senders": {r: (st.first_data, st.closed_at, st.last_heard, st.flags_seen,
                            st.duplicates, st.addr, list(st.buffer.delivered_elems),
                            st.buffer.complete(), st.buffer.meets(s.required, s.options.scope))
                        for r, st in s.senders.items()},
        }

    def arrays(self) -> dict:
        return {r: ([v.tobytes() for v in st.buffer.values],
                    [d.tobytes() for d in st.buffer.delivered],
                    [c.tobytes() for c in st.buffer.chunks])
                for r, st in self.session.senders.items()}


def _data(plan: ChunkPlan, grads: list[np.ndarray], rank: int, layer: int, seq: int, *,
          pull: bool, flags: int = 0, qdepth: int = 0, qdelay: int = 0, hops: int = 0) -> bytes:
    off = plan.offset(layer, seq)
    payload = grads[layer][off:off + plan.length(layer, seq)].astype(">f4").tobytes()
    return wire.pack_header(wire.KIND_DATA, flags | (wire.FLAG_PULL if pull else 0), JOB, rank,
                            layer, 3, 2, len(payload), seq, off, qdepth, hops, qdelay) + payload


def _malformed(rng: np.random.Generator, plan: ChunkPlan, grads: list[np.ndarray], rank: int,
               pull: bool) -> bytes:
    """One bad or unexpected packet from `rank`, of a randomly chosen sort."""
    pf = wire.FLAG_PULL if pull else 0
    layer = int(rng.integers(plan.num_layers))
    seq = int(rng.integers(plan.chunk_counts[layer]))
    good = _data(plan, grads, rank, layer, seq, pull=pull)
    hdr = wire.unpack_header(good)
    payload = good[wire.HEADER_LEN:]
    sort = int(rng.integers(10))
    if sort == 0:    # offset off the plan
        return wire.pack_header(0, pf, JOB, rank, layer, 3, 0, len(payload), seq,
                                hdr.elem_offset + 1) + payload
    if sort == 1:    # a chunk one value short (payload_len consistent)
        p = payload[:-4]
        return wire.pack_header(0, pf, JOB, rank, layer, 3, 0, len(p), seq, hdr.elem_offset) + p
    if sort == 2:    # NaN or infinity among the values
        vals = np.frombuffer(payload, dtype=">f4").copy()
        vals[int(rng.integers(len(vals)))] = np.nan if rng.random() < 0.5 else np.inf
        return good[:wire.HEADER_LEN] + vals.tobytes()
    if sort == 3:    # no such layer / no such chunk
        if rng.random() < 0.5:
            return wire.pack_header(0, pf, JOB, rank, plan.num_layers, 3, 0, len(payload), 0, 0) + payload
        return wire.pack_header(0, pf, JOB, rank, layer, 3, 0, len(payload),
                                plan.chunk_counts[layer], 0) + payload
    if sort == 4:    # a rank not expected
        return wire.pack_header(0, pf, JOB, 9, layer, 3, 0, len(payload), seq, hdr.elem_offset) + payload
    if sort == 5:    # truncated / foreign job (dropped by the port)
        return good[:20] if rng.random() < 0.5 else wire.pack_header(0, pf, JOB + 1, rank, layer, 3)
    if sort == 6:    # PROBE, valid padding (answered with BITMAPs, at a bounded rate)
        pad = bytes(int(rng.integers(0, 200)))
        return wire.pack_header(wire.KIND_PROBE, pf, JOB, rank, wire.ALL_LAYERS, 3,
                                payload_len=len(pad)) + pad
    if sort == 7:    # PROBE with non-zero padding
        return wire.pack_header(wire.KIND_PROBE, pf, JOB, rank, wire.ALL_LAYERS, 3,
                                payload_len=3) + b"\0\1\0"
    if sort == 8:    # a kind a receiver does not take
        return wire.pack_header(wire.KIND_ACK, pf, JOB, rank, 0, 3)
    return good[:-1]   # payload shorter than payload_len


def _scenario(seed: int, scope: str, pull: bool) -> None:
    rng = np.random.default_rng(seed)
    sizes = [int(n) for n in rng.integers(1, 900, size=int(rng.integers(1, 5)))]
    chunk = (int(rng.integers(1, 80)) if rng.random() < 0.5
             else [int(c) for c in rng.integers(1, 80, size=len(sizes))])
    plan = ChunkPlan(sizes, chunk)
    senders = [wire.PS_RANK] if pull else [int(r) for r in rng.choice(3, int(rng.integers(1, 4)), replace=False)]
    addrs = {wire.PS_RANK: ("10.0.0.9", 6000), **ADDRS}
    required = tuple(float(x) for x in rng.choice([0.0, 0.5, 0.8, 0.9, 1.0], size=len(sizes)))
    options = ReceiveOptions(deadline=float(rng.choice([0.05, 0.2, float("inf")])),
                             absent_timeout=float(rng.choice([0.3, 5.0])),
                             ack_every=int(rng.choice([1, 4, 16])),
                             ack_delay=float(rng.choice([0.0005, 0.002])), scope=scope)
    clock = [float(rng.choice([0.0, 1000.0]))]
    worlds = [World(c, plan, clock, pull=pull, senders=senders, required=required, options=options)
              for c in ("python", "native")]
    grads = {r: [rng.normal(0, 1, n).astype(np.float32) for n in sizes] for r in senders}
    # each sender's chunks with loss, duplicates and resends, interleaved and locally reordered
    events = []
    for r in senders:
        if rng.random() < 0.1:
            continue      # a silent sender
        keys = [(layer, seq) for layer in range(plan.num_layers) for seq in range(plan.chunk_counts[layer])]
        for layer, seq in keys:
            if rng.random() < 0.15:
                continue
            events.append(("data", r, layer, seq, 0))
            if rng.random() < 0.1:
                events.append(("data", r, layer, seq, wire.FLAG_RETX))
        for _ in range(int(rng.integers(0, 6))):
            events.append(("bad", r))
        if rng.random() < 0.2:
            events.append(("close", r))
    order = np.argsort(np.arange(len(events)) + rng.normal(0, 4, len(events)))
    last = clock[0]
    for i in order:
        ev = events[i]
        clock[0] += float(rng.exponential(0.002)) if rng.random() < 0.9 else float(rng.exponential(0.2))
        now = clock[0]
        if rng.random() < 0.3:
            tick_at = now if rng.random() < 0.5 else last + options.ack_delay  # exactly on a wake
            for w in worlds:
                w.tick(max(tick_at, last))
        kind, r = ev[0], ev[1]
        if kind == "data":
            flags = ev[4] | (wire.FLAG_ACK_NOW if rng.random() < 0.05 else 0) | (
                wire.FLAG_LAST if rng.random() < 0.02 else 0)
            data = _data(plan, grads[r], r, ev[2], ev[3], pull=pull, flags=flags,
                         qdepth=int(rng.integers(0, 65536)), qdelay=int(rng.integers(0, 1 << 33)) & 0xFFFFFFFF,
                         hops=int(rng.integers(0, 4)))
            tos = int(rng.choice([0, 1, 2, 3, wire.data_tos(3, False) | 3]))
            for w in worlds:
                w.feed(data, addrs[r], tos, now)
        elif kind == "bad":
            data = _malformed(rng, plan, grads[r], r, pull)
            for w in worlds:
                w.feed(data, addrs[r], 0, now)
        else:
            why = str(rng.choice(["absent", "rejoined", "deadline", "bound"]))
            for w in worlds:
                w.session.close_sender(r, why)
        if rng.random() < 0.05:   # a duplicate of what just arrived, from elsewhere
            for w in worlds:
                w.feed(data if kind != "close" else b"", ("10.9.9.9", 1), 0, now)
        py, nat = (w.observe() for w in worlds)
        assert nat == py, f"seed {seed}: the cores differ after {ev}"
        last = now
    for step in (0.001, 0.01, 0.3, 10.0):   # the timers: ACK delay, deadline, absence
        clock[0] += step
        results = [w.tick(clock[0]) for w in worlds]
        assert results[0] == results[1]
        py, nat = (w.observe() for w in worlds)
        assert nat == py, f"seed {seed}: the cores differ at tick {clock[0]}"
    assert worlds[1].arrays() == worlds[0].arrays()


@needs_native
@pytest.mark.parametrize("scope", ["layer", "tensor"])
@pytest.mark.parametrize("pull", [False, True])
def test_both_cores_send_and_decide_the_same(scope: str, pull: bool) -> None:
    for seed in range(30):
        _scenario(seed, scope, pull)


def _exchange(core: str, seed: int, loss: float) -> list:
    """One sender (the Python core) pushing a round to a receiver on `core` over an in-memory
    wire that loses, delays and reorders both ways; every datagram delivered, in order."""
    plan = ChunkPlan([1000, 700, 64], [64, 50, 16])
    rng = np.random.default_rng(seed)
    grads = [np.random.default_rng(1).normal(0, 0.01, n).astype(np.float32) for n in plan.layer_sizes]
    clock = [0.0]
    s_addr, r_addr = ("10.0.0.1", 5000), ("10.0.0.9", 6000)
    s_port = Port(JOB, 0, lambda: clock[0])
    r_port = Port(JOB, wire.PS_RANK, lambda: clock[0])
    bounds = LayerBounds.fixed(plan.num_layers, 0.1, scope="tensor")
    sender = SendSession(s_port, r_addr, wire.PS_RANK, plan, grads, 3, pull=False,
                         options=SendOptions(window=10, cc="ecn", probe_interval=0.02),
                         budget=LossBudget.of(bounds.push, plan, bounds.scope), core="python")
    receiver = transport_core.recv_session(
        r_port, plan, 3, pull=False, senders=[0], required=bounds.required_fraction(pull=False),
        options=ReceiveOptions(deadline=0.5, scope="tensor"), core=core)
    wire_q: list = []
    trace: list = []
    n = 0
    wake = {"s": 0.0, "r": 0.0}
    while not sender.done and clock[0] < 5.0:
        for port, src in ((s_port, s_addr), (r_port, r_addr)):
            for d in port.take():
                trace.append((round(clock[0], 9), src, d.data, d.tos))
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
    trace.append(("end", sender.done, receiver.closed_by(), receiver.fractions(),
                  [v.tobytes() for v in receiver.senders[0].buffer.values],
                  dict(s_port.counters), dict(r_port.counters)))
    return trace


@needs_native
@pytest.mark.parametrize("loss", [0.0, 0.05, 0.3])
def test_a_lossy_exchange_is_the_same_frame_for_frame(loss: float) -> None:
    for seed in range(5):
        py, nat = _exchange("python", seed, loss), _exchange("native", seed, loss)
        assert len(nat) == len(py)
        assert nat == py


def test_a_core_that_is_not_built_falls_back_in_one_line(monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture) -> None:
    monkeypatch.setattr(transport_core, "NATIVE_ERROR", "No module named 'hosts.transport._native'")
    monkeypatch.setattr(transport_core, "_announced", False)
    assert transport_core.resolve(None) == "python"
    assert transport_core.resolve("native") == "python"
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "running the Python core" in err[0]    # once per process
    port = Port(JOB, wire.PS_RANK, lambda: 0.0)
    session = transport_core.recv_session(port, ChunkPlan([10], 5), 0, pull=False, senders=[0],
                                          required=(1.0,), options=ReceiveOptions(), core="native")
    assert type(session) is RecvSession


def test_an_unknown_core_is_a_config_error() -> None:
    from hosts.errors import ConfigError
    with pytest.raises(ConfigError, match="--core 'fast'"):
        transport_core.resolve("fast")


def test_the_core_flag_reaches_the_config() -> None:
    import argparse

    from hosts.exchange.config import add_transport_arguments, config_from_args
    ap = argparse.ArgumentParser()
    add_transport_arguments(ap)
    for flag, want in (("python", "python"), ("native", transport_core.default_core())):
        config = config_from_args(ap.parse_args(["--transport", "ltp", "--core", flag]), 3, 1)
        assert config.core == want and config.summary()["core"] == want
    assert config_from_args(ap.parse_args(["--transport", "ltp"]), 3, 1).core == transport_core.default_core()


@needs_native
def test_a_native_session_and_its_arrays_are_freed_when_dropped() -> None:
    """No reference cycle: a PS's per-round buffers go when the round does, not at the next
    cyclic collection (RSS over a long run)."""
    import gc
    import weakref

    port = Port(JOB, wire.PS_RANK, lambda: 0.0)
    session = transport_core.recv_session(port, ChunkPlan([1000, 10], 64), 0, pull=False,
                                          senders=[0, 1], required=(1.0, 1.0),
                                          options=ReceiveOptions(), core="native")
    refs = [weakref.ref(session), *(weakref.ref(st.buffer) for st in session.senders.values())]
    enabled = gc.isenabled()
    gc.disable()
    try:
        del session
        assert all(r() is None for r in refs)
    finally:
        if enabled:
            gc.enable()


def test_the_native_core_is_built_where_it_can_be() -> None:
    """Where `make setup` had a C++ compiler and the Python headers (it installs both), the
    extension must have been built: a broken build fails here instead of skipping the
    differential tests."""
    import shutil
    import sysconfig
    from pathlib import Path

    headers = Path(sysconfig.get_paths()["include"]) / "Python.h"
    if shutil.which("g++") is None or not headers.exists():
        pytest.skip("no g++ or no Python headers: the Python core is expected")
    assert transport_core.native_available(), transport_core.NATIVE_ERROR
