"""DATA routed from the socket straight into native receive sessions (hosts/transport/
data_route.py, native/batch_io.cpp `Receiver.route`) does what the reference path (Port.parse,
Router.dispatch, on_packet) does with the same datagrams, on real loopback sockets: the same
frames back to each sender (bytes, TOS, order), the same counters, the same reassembled arrays
and session state. The scenario mixes every way a datagram can leave the fast path."""
import socket

import numpy as np
import pytest

from hosts import wire
from hosts.transport import data_route, mac_impl
from hosts.transport.chunking import ChunkPlan
from hosts.transport.core import recv_session
from hosts.transport.endpoint import Endpoint, default_io
from hosts.transport.mux import Mux
from hosts.transport.receiver import ReceiveOptions

pytestmark = pytest.mark.skipif(default_io() != "batch",
                                reason="the native extension (batched I/O) is not built")

JOB = 21
ROUND = 3
PLAN = ChunkPlan([700, 64, 1500], [50, 16, 100])
REQUIRED = (0.95, 1.0, 0.9)


def _socket() -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    s.setsockopt(socket.IPPROTO_IP, socket.IP_RECVTOS, 1)
    s.bind(("127.0.0.1", 0))
    return s


def _data(grads: list[np.ndarray], rank: int, layer: int, seq: int, *, flags: int = 0,
          round_: int = ROUND, job: int = JOB, qdepth: int = 0, qdelay: int = 0) -> bytes:
    off = PLAN.offset(layer, seq)
    payload = grads[layer][off:off + PLAN.length(layer, seq)].astype(">f4").tobytes()
    return wire.pack_header(wire.KIND_DATA, flags, job, rank, layer, round_, 1, len(payload), seq,
                            off, qdepth, 2, qdelay) + payload


def _scenario(seed: int, key: bytes | None = None) -> list[tuple[int, bytes, int]]:
    """(socket index: 0 rank 0's, 1 rank 1's, 2 rank 7's; datagram; TOS), in sending order:
    both ranks' chunks shuffled with duplicates, RETX and ACK_NOW flags, ECN marks and
    telemetry, and among them datagrams of every sort the fast path must leave alone. With
    `key`, every datagram is signed under it (--packet-mac all) but unsigned and forged ones."""
    rng = np.random.default_rng(seed)
    grads = {r: [rng.standard_normal(n).astype(np.float32) for n in PLAN.layer_sizes]
             for r in (0, 1)}
    chunks = [(r, layer, seq) for r in (0, 1) for layer in range(PLAN.num_layers)
              for seq in range(PLAN.chunk_counts[layer])]
    order = [chunks[i] for i in rng.permutation(len(chunks))]
    for j in rng.integers(0, len(order), 25):      # duplicates while open, and late ones
        order.insert(int(rng.integers(j + 1, len(order) + 1)), order[j])
    out = []
    for i, (rank, layer, seq) in enumerate(order):
        flags = int(rng.choice([0, 0, 0, wire.FLAG_RETX, wire.FLAG_ACK_NOW, wire.FLAG_DROPPABLE]))
        tos = int(rng.choice([0, 1, 2, 3, 0x20, 0x23]))
        out.append((rank, _data(grads[rank], rank, layer, seq, flags=flags,
                                qdepth=int(rng.integers(0, 90)),
                                qdelay=int(rng.integers(0, 5000))), tos))
        if i % 4 == 1:     # the next chunk's DATA spoilt, so it is not yet a duplicate
            rank, layer, seq = order[min(i + 1, len(order) - 1)]
            good = _data(grads[rank], rank, layer, seq)
            payload = good[wire.HEADER_LEN:]
            nan = np.frombuffer(payload, ">f4").copy()
            nan[0] = np.nan
            others = [
                (rank, bytes([0x20]) + good[1:], 0),                                # version 2
                (rank, good[:-4], 0),                                              # truncated
                (rank, good + b"\0\0\0\0", 0),                                     # too long
                (rank, _data(grads[rank], rank, layer, seq, job=JOB + 1), 0),       # foreign job
                (rank, good[:wire.HEADER_LEN] + nan.tobytes(), 0),                  # NaN
                (rank, wire.pack_header(0, 0, JOB, rank, 9, ROUND, 0, len(payload), 0, 0)
                 + payload, 0),                                                     # no layer 9
                (2, _data(grads[rank], 7, layer, seq), 0),                          # rank 7
                (rank, _data(grads[rank], rank, layer, seq, round_=ROUND - 1), 0),  # stale
                (rank, _data(grads[rank], rank, layer, seq, round_=ROUND + 2), 0),  # early
                (rank, _data(grads[rank], rank, layer, seq, flags=wire.FLAG_PULL), 0),  # a pull
                (2, good, 0),                                                       # rank 7's socket
                (1 - rank, good, 0),                                                # the other rank's socket
                (rank, wire.pack_header(wire.KIND_PROBE, 0, JOB, rank, wire.ALL_LAYERS, ROUND,
                                        payload_len=16) + bytes(16), 0xB8),         # a PROBE
                (rank, b"\x10", 0),                                                 # 1 byte
            ]
            if key is not None:
                others += [(rank, b"unsigned" + good, 0),                          # no trailer
                           (rank, good + bytes(16), 0)]                            # a forged one
            out.append(others[(i // 4) % len(others)])
    if key is None:
        return out
    mac = mac_impl.make(key)
    return [(i, d if d.startswith(b"unsigned") or d.endswith(bytes(16)) else mac.sign(d), tos)
            for i, d, tos in out]


def _run(io: str, routed: bool, core: str, seed: int,
         key: bytes | None = None) -> tuple[dict, int]:
    """Send the scenario to a PS-like receiver (DATA admitted by rank -> address, as the round
    server's router admits it) and let it take everything; what each side saw, and how many
    datagrams took the reference path's parse."""
    socks = [_socket() for _ in range(3)]
    ep = Endpoint(("127.0.0.1", 0), JOB, wire.PS_RANK, io=io, mac_key=key,
                  mac_mode="all" if key else "off")
    mux = Mux(ep)
    mux.route_data = routed
    sources = {r: socks[r].getsockname() for r in (0, 1)}
    sources[7] = socks[2].getsockname()     # admitted, but not a sender of this round
    mux.admit = lambda pkt: sources.get(pkt.header.worker_rank) == pkt.addr
    mux.data_sources = sources
    session = recv_session(ep, PLAN, ROUND, pull=False, senders=[0, 1], required=REQUIRED,
                           options=ReceiveOptions(ack_every=4), core=core)
    mux.add(session)
    parsed = 0
    parse = ep.parse

    def counting_parse(*args):
        nonlocal parsed
        parsed += 1
        return parse(*args)

    ep.parse = counting_parse
    try:
        scenario = _scenario(seed, key)
        for i, data, tos in scenario:
            socks[i].sendmsg([data], [(socket.IPPROTO_IP, socket.IP_TOS, bytes([tos, 0, 0, 0]))],
                             0, ep.address)
        before = -1
        while ep.counters["packets_received"] != before:
            before = ep.counters["packets_received"]
            mux.drain()
        assert ep.counters["packets_received"] == len(scenario)
        back = []
        for s in socks:
            s.setblocking(False)
            got = []
            while True:
                try:
                    data, anc, _, _ = s.recvmsg(65535, socket.CMSG_SPACE(4))
                except BlockingIOError:
                    break
                got.append((data, next((d[0] for _, _, d in anc), None)))
            back.append(got)
        state = {r: (st.closed_by, st.flags_seen, st.duplicates, list(st.buffer.delivered_elems),
                     [v.tobytes() for v in st.buffer.values],
                     [c.tobytes() for c in st.buffer.chunks])
                 for r, st in session.senders.items()}
        seen = {"frames": back, "counters": ep.counters.snapshot(), "state": state,
                "telemetry": session.telemetry.as_dict(), "done": session.done}
        return seen, parsed
    finally:
        ep.close()
        for s in socks:
            s.close()


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("key", [None, b"k" * 32], ids=["unsigned", "packet-mac-all"])
def test_routed_data_meets_the_reference_paths_outcome(seed: int, key: bytes | None) -> None:
    if key is not None and not mac_impl.native_available():
        pytest.skip("the native MAC is not built: signed DATA is never routed")
    routed, parsed = _run("batch", True, "native", seed, key)
    reference, parsed_ref = _run("batch", False, "native", seed, key)
    single, _ = _run("single", False, "native", seed, key)
    python, _ = _run("single", False, "python", seed, key)
    assert routed == reference == single == python
    assert routed["frames"][0] and routed["frames"][1] and not routed["frames"][2]
    seen = ["drop_wrong_source", "drop_duplicate", "drop_nonfinite", "drop_corrupt",
            "drop_foreign_rank", "drop_foreign_job", "drop_truncated", "drop_stale_round",
            "early_round_buffered", "late_data", "retx_received"] + (["drop_bad_mac"] if key else [])
    for counter in seen:
        assert routed["counters"][counter], counter
    # the routed run parsed in Python only what the fast path must leave alone
    assert parsed_ref == routed["counters"]["packets_received"]
    assert 0 < parsed < parsed_ref / 4


def test_routing_stands_aside_where_python_must_see_data() -> None:
    ep = Endpoint(("127.0.0.1", 0), JOB, wire.PS_RANK, io="batch")
    signed = Endpoint(("127.0.0.1", 0), JOB, wire.PS_RANK, io="batch", mac_key=b"k" * 32,
                      mac_mode="all")
    control_only = Endpoint(("127.0.0.1", 0), JOB, wire.PS_RANK, io="batch", mac_key=b"k" * 32,
                            mac_mode="control")
    single = Endpoint(("127.0.0.1", 0), JOB, wire.PS_RANK, io="single")
    try:
        mux = Mux(ep)
        assert data_route.can_route(mux, ep)
        assert data_route.can_route(Mux(control_only), control_only)
        # DATA's MAC: checked natively where the native MAC was built, else by the Python one
        assert data_route.can_route(Mux(signed), signed) == mac_impl.native_available()
        signed.mac = mac_impl.make(b"k" * 32, "python")
        assert not data_route.can_route(Mux(signed), signed)
        assert not data_route.can_route(Mux(single), single)
        mux.handlers[wire.KIND_DATA] = lambda pkt, now: True         # someone else wants DATA
        assert not data_route.can_route(mux, ep)
        del mux.handlers[wire.KIND_DATA]
        mux.admit = lambda pkt: True                                 # admit with no table
        assert not data_route.can_route(mux, ep)
        mux.data_sources = {}
        assert data_route.can_route(mux, ep)
    finally:
        for e in (ep, signed, control_only, single):
            e.close()


def test_datagrams_read_before_a_dispatch_raised_are_taken_next_time() -> None:
    """recvmmsg reads ahead: when the reference path raises for one datagram, those read after
    it wait in the receiver and the next receive takes them first, none lost or reordered."""
    grads = [np.ones(n, dtype=np.float32) for n in PLAN.layer_sizes]
    tx = _socket()
    ep = Endpoint(("127.0.0.1", 0), JOB, wire.PS_RANK, io="batch")
    try:
        mux = Mux(ep)
        session = recv_session(ep, PLAN, ROUND, pull=False, senders=[0], required=(1.0,) * 3,
                               options=ReceiveOptions(), core="native")
        mux.add(session)
        raised = []

        def failing_once(pkt, now):
            if not raised:
                raised.append(pkt.header.kind)
                raise RuntimeError("a handler failed")
            return True

        mux.handlers[wire.KIND_PROBE] = failing_once
        probe = wire.pack_header(wire.KIND_PROBE, 0, JOB, 0, wire.ALL_LAYERS, ROUND)
        before = [_data(grads, 0, 0, seq) for seq in range(5)]
        after = [_data(grads, 0, 0, seq) for seq in range(5, 14)]
        for d in before + [probe] + after:
            tx.sendto(d, ep.address)
        with pytest.raises(RuntimeError):
            mux.drain()
        assert ep.counters["packets_received"] == 6 and ep.receiver.pending == len(after)
        assert session.senders[0].buffer.delivered_elems[0] == 5 * 50
        mux.drain()
        assert ep.counters["packets_received"] == 15 and not ep.receiver.pending
        assert session.senders[0].buffer.delivered_elems[0] == 700
    finally:
        ep.close()
        tx.close()
