"""The transport's sans-IO core (Port, Router, SendSession, RecvSession) driven with synthetic
packets, losses and timers on a made-up clock: no socket, no thread, no sleep."""
from __future__ import annotations

import ast
import heapq
from pathlib import Path

import numpy as np
import pytest

from hosts import wire
from hosts.errors import PeerTimeout
from hosts.transport import core as transport_core
from hosts.transport.bounds import LayerBounds, LossBudget
from hosts.transport.chunking import ChunkPlan
from hosts.transport.congestion import INITIAL_RTO
from hosts.transport.port import Port
from hosts.transport.packet_mac import TAG_BYTES
from hosts.transport.probe_answer import (ANSWER_BURST, SEGMENT_CHUNKS, ProbeAnswers, bitmap_bytes,
                                          probe_padding)
from hosts.transport.receiver import ReceiveOptions, RecvSession
from hosts.transport.router import Router
from hosts.transport.sender import SendGroup, SendOptions, SendSession

JOB = 3
PS = ("10.0.0.1", 19527)
WORKER = ("10.0.0.2", 19527)
PLAN = ChunkPlan([2000, 500, 100], 50)        # 40 + 10 + 2 chunks
CORE = ("port.py", "router.py", "sender.py", "receiver.py", "congestion.py", "bounds.py",
        "chunking.py", "reassembly.py", "deadline.py", "probe_answer.py")


class Wire:
    """Two ports joined by a made-up path: a fixed one-way delay, a serialisation time per
    datagram, and a loss rule for DATA. The clock jumps from event to event."""

    def __init__(self, delay: float = 0.001, per_packet: float = 0.0001, loss=None, seed: int = 0):
        self.now = 0.0
        self.delay = delay
        self.per_packet = per_packet
        self.loss = loss or (lambda rng, hdr: False)
        self.rng = np.random.default_rng(seed)
        self.ports = {PS: Port(JOB, wire.PS_RANK, self.clock), WORKER: Port(JOB, 0, self.clock)}
        self.routers = {addr: Router(port) for addr, port in self.ports.items()}
        self._flight: list = []
        self._free = {addr: 0.0 for addr in self.ports}
        self._n = 0
        self.data_dropped = 0

    def clock(self) -> float:
        return self.now

    def _send_out(self) -> None:
        for src, port in self.ports.items():
            for dg in port.take():
                start = max(self.now, self._free[src])
                self._free[src] = start + self.per_packet
                hdr = wire.unpack_header(dg.data)
                if hdr.kind == wire.KIND_DATA and self.loss(self.rng, hdr):
                    self.data_dropped += 1
                    continue
                self._n += 1
                heapq.heappush(self._flight, (start + self.per_packet + self.delay, self._n,
                                              dg.addr, src, dg.data, dg.tos))

    def run(self, done, limit: float = 10.0) -> None:
        """Deliver, tick and send until `done()` or `limit` s of made-up time."""
        while not done():
            wake = min(r.tick(self.now) for r in self.routers.values())
            self._send_out()
            if done():
                return
            nxt = min(wake, self._flight[0][0] if self._flight else float("inf"))
            assert nxt < limit, "the transfer stalled"
            self.now = max(self.now, nxt)
            while self._flight and self._flight[0][0] <= self.now:
                _, _, dst, src, data, tos = heapq.heappop(self._flight)
                pkt = self.ports[dst].parse(data, src, tos)
                if pkt is not None:
                    self.routers[dst].dispatch(pkt, self.now)
            self._send_out()


class PriorityWire(Wire):
    """A switch's strict priority on the made-up path: DATA towards the PS waits behind a
    standing queue (`standing` s) and crosses the bottleneck `gap` s apart, while control
    packets (PROBE, BITMAP, ACK) ride the highest-priority queue past it."""

    def __init__(self, gap: float, standing: float, **kwargs) -> None:
        super().__init__(**kwargs)
        self.gap = gap
        self.standing = standing
        self._bottleneck_free = 0.0

    def _send_out(self) -> None:
        for src, port in self.ports.items():
            for dg in port.take():
                hdr = wire.unpack_header(dg.data)
                at = self.now + self.delay
                if hdr.kind == wire.KIND_DATA:
                    if self.loss(self.rng, hdr):
                        self.data_dropped += 1
                        continue
                    start = max(self.now + self.standing, self._bottleneck_free)
                    self._bottleneck_free = start + self.gap
                    at = start + self.gap + self.delay
                self._n += 1
                heapq.heappush(self._flight, (at, self._n, dg.addr, src, dg.data, dg.tos))


def _layers(seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.normal(size=n).astype(np.float32) for n in PLAN.layer_sizes]


def _push(net: Wire, round_: int, bounds: LayerBounds, options: SendOptions,
          deadline: float = 0.5) -> tuple[SendSession, RecvSession]:
    recv = RecvSession(net.ports[PS], PLAN, round_, pull=False, senders=[0],
                       required=bounds.required_fraction(pull=False),
                       options=ReceiveOptions(deadline=deadline, scope=bounds.scope))
    send = SendSession(net.ports[WORKER], PS, wire.PS_RANK, PLAN, _layers(round_), round_,
                       pull=False, options=options,
                       critical_layers=bounds.critical_layers(pull=False),
                       budget=LossBudget.of(bounds.push, PLAN, bounds.scope))
    net.routers[PS].add(recv)
    net.routers[WORKER].add(send)
    net.run(lambda: send.done and recv.done)
    return send, recv


def test_the_core_modules_touch_no_socket_clock_thread_or_sleep():
    here = Path(__file__).resolve().parents[3] / "hosts" / "transport"
    banned = {"socket", "select", "time", "threading", "asyncio", "scapy"}
    for name in CORE:
        tree = ast.parse((here / name).read_text())
        imported = {alias.name.split(".")[0] for node in ast.walk(tree)
                    if isinstance(node, ast.Import) for alias in node.names}
        imported |= {(node.module or "").split(".")[0] for node in ast.walk(tree)
                     if isinstance(node, ast.ImportFrom)}
        assert not imported & banned, f"{name} imports {imported & banned}"


def test_a_port_queues_what_the_sessions_send_until_the_driver_takes_it():
    net = Wire()
    send = SendSession(net.ports[WORKER], PS, wire.PS_RANK, PLAN, _layers(0), 0, pull=False,
                       options=SendOptions(burst=8))
    assert send.tick(0.0) == 0.0                   # burst spent: call again at once
    out = net.ports[WORKER].take()
    assert len(out) == 8 and all(d.addr == PS for d in out)
    assert {wire.unpack_header(d.data).kind for d in out} == {wire.KIND_DATA}
    assert net.ports[WORKER].take() == []
    assert net.ports[WORKER].counters["packets_sent"] == 8


def test_a_loss_free_reliable_push_completes_without_resends():
    net = Wire()
    send, recv = _push(net, 0, LayerBounds.fixed(3, 0.0, "tensor"), SendOptions(window=10))
    assert send.stats.closed_by == "complete" and send.stats.retransmissions == 0
    # the round records the loss timer's inputs: 2 ms of path delay, 100 us a packet, and at
    # most the receiver's 2 ms ACK delay; the RTO floored at the 20 ms probe interval
    summary = send.window_summary()
    assert 2.0 <= summary["srtt_ms"] <= 8.0 and summary["rto_ms"] == 20.0
    assert recv.fractions()[0] == [1.0, 1.0, 1.0]
    assert np.array_equal(recv.senders[0].buffer.values[2], _layers(0)[2])


def test_lost_chunks_of_a_reliable_push_are_resent_on_the_acks_evidence():
    net = Wire(loss=_lose_first_pass)
    send, recv = _push(net, 0, LayerBounds.fixed(3, 0.0, "tensor"), SendOptions(window=10))
    assert net.data_dropped == 7
    # later chunks' ACKs show every loss: resent before any probe (was: after one)
    assert send.stats.retransmissions == send.fast_repairs == 7 and send.stats.probes == 0
    assert send.stats.fast_resends == 7
    assert send.stats.closed_by == "complete" and recv.fractions()[0] == [1.0, 1.0, 1.0]


def test_a_tail_loss_is_repaired_by_the_probe_and_counted_as_the_timers():
    seen = []

    def lose_last_of_first_pass(rng, hdr) -> bool:   # no later chunk's ACK can reveal it
        seen.append(hdr.flags & wire.FLAG_RETX)
        return not seen[-1] and len(seen) == PLAN.total_chunks

    net = Wire(loss=lose_last_of_first_pass)
    send, recv = _push(net, 0, LayerBounds.fixed(3, 0.0, "tensor"), SendOptions(window=10))
    assert net.data_dropped == 1 and send.stats.probes >= 1
    assert send.stats.retransmissions == 1 and send.stats.fast_resends == 0
    assert send.stats.closed_by == "complete" and recv.fractions()[0] == [1.0, 1.0, 1.0]


def test_a_10pct_bound_closes_rounds_under_5pct_loss_without_resends():
    """Issue 22's acceptance test on the core alone: 5 % random DATA loss, 10 % tensor bound."""
    net = Wire(loss=lambda rng, hdr: rng.random() < 0.05, seed=7)
    bounds = LayerBounds.fixed(3, 0.1, "tensor")
    rounds, by_bound = 40, 0
    for r in range(rounds):
        send, recv = _push(net, r, bounds, SendOptions(window=10, order="interleave"))
        sizes = PLAN.layer_sizes
        delivered = sum(f * n for f, n in zip(recv.fractions()[0], sizes)) / sum(sizes)
        assert delivered >= 0.9
        assert send.stats.closed_by in ("bound", "complete")
        by_bound += send.stats.retransmissions == 0
        net.routers[PS].prune(r)
        net.routers[WORKER].prune(r)
    assert net.data_dropped > 0
    assert by_bound >= 0.9 * rounds


def _lose_first_pass(rng, hdr) -> bool:
    return not hdr.flags & wire.FLAG_RETX and hdr.chunk_seq % 7 == 3


def _queued_push(gap: float = 0.008, standing: float = 0.08, loss=None, cc_loss: str = "always"):
    """A reliable push (window 10) across a PriorityWire; (wire, sender, receiver)."""
    net = PriorityWire(gap, standing, delay=0.01, loss=loss)
    send, recv = _push(net, 0, LayerBounds.fixed(3, 0.0, "tensor"),
                       SendOptions(window=10, cc_loss=cc_loss), deadline=30.0)
    return net, send, recv


@pytest.mark.parametrize("gap, standing", [(0.008, 0.08), (0.04, 0.1)])
def test_data_queued_behind_a_probe_is_not_declared_lost(gap, standing):
    """A round trip (standing queue + our share of the bottleneck) far above the probe
    interval, no loss: probes overtake queued DATA, and the sender must neither resend nor
    cut its window (before the RTT rule: 14 and 53 loss halvings, 5 and 73 resends)."""
    _, send, recv = _queued_push(gap, standing)
    assert send.stats.closed_by == "complete" and recv.fractions()[0] == [1.0, 1.0, 1.0]
    assert send.stats.retransmissions == 0
    assert send.window_summary()["cc_loss_cuts"] == 0
    assert send.window.rtt.srtt > standing                   # it measured the queue


def test_behind_a_standing_queue_only_the_lost_chunks_are_resent():
    net, send, recv = _queued_push(loss=_lose_first_pass)
    assert net.data_dropped == 7 and send.stats.retransmissions == 7
    # beyond bound 0, each loss is an event, but one cut per round trip: the 7 losses are found
    # as later ACKs come (not by one probe at the end), over ~3 round trips of the 8 ms gaps
    assert 1 <= send.window_summary()["cc_loss_cuts"] <= 3
    assert send.stats.closed_by == "complete" and recv.fractions()[0] == [1.0, 1.0, 1.0]


def test_loss_without_signs_of_congestion_spares_the_window_when_told():
    """The same losses with --cc-loss congested: this wire marks nothing and echoes no queue,
    so no loss is taken for congestion; the same chunks are resent all the same."""
    net, send, recv = _queued_push(loss=_lose_first_pass, cc_loss="congested")
    assert net.data_dropped == 7 and send.stats.retransmissions == 7
    summary = send.window_summary()
    assert summary["cc_loss_cuts"] == 0 and 1 <= summary["cc_losses_spared"] <= net.data_dropped
    assert send.stats.closed_by == "complete" and recv.fractions()[0] == [1.0, 1.0, 1.0]


def test_a_resent_chunk_gives_no_rtt_sample():
    """Karn's rule: the ACK of a resent chunk may answer its first send."""
    _, send, _ = _queued_push(loss=_lose_first_pass)
    _, reference, _ = _queued_push()
    # Only ACKs of chunks sent once were measured: the resends' long waits are not in srtt.
    assert send.window.rtt.samples < reference.window.rtt.samples
    assert send.window.rtt.srtt < 2 * reference.window.rtt.srtt


def test_timers_a_silent_receiver_makes_the_sender_probe_then_give_up():
    net = Wire(loss=lambda rng, hdr: True)         # every DATA lost, and nobody listens
    send = SendSession(net.ports[WORKER], PS, wire.PS_RANK, PLAN, _layers(0), 0, pull=False,
                       options=SendOptions(window=10, peer_timeout=2.5))
    wake = send.tick(0.0)
    # The window is full: a probe timer is armed, TCP's initial RTO as no ACK measured the path.
    assert wake == pytest.approx(INITIAL_RTO)
    with pytest.raises(PeerTimeout):
        t = wake
        while True:
            t = send.tick(t)
    assert send.stats.probes >= 1


def test_the_deadline_closes_a_receiver_whose_sender_went_quiet():
    net = Wire()
    recv = RecvSession(net.ports[PS], PLAN, 0, pull=False, senders=[0], required=(1.0,) * 3,
                       options=ReceiveOptions(deadline=0.2))
    hdr = wire.pack_header(wire.KIND_DATA, 0, JOB, 0, 0, 0, 4, 200, 0, 0)
    pkt = net.ports[PS].parse(hdr + np.ones(50, ">f4").tobytes(), WORKER)
    recv.on_packet(pkt, 1.0)
    assert recv.tick(1.0) == pytest.approx(1.2)    # the deadline's timer
    recv.tick(1.2)
    assert recv.closed_by() == {0: "deadline"}
    stops = [wire.unpack_header(d.data) for d in net.ports[PS].take()]
    assert stops[-1].kind == wire.KIND_STOP


@pytest.mark.parametrize("core", ["python", "native"])
def test_a_transfer_with_no_deadline_gives_up_on_a_sender_gone_silent_mid_transfer(core):
    if core == "native" and not transport_core.native_available():
        pytest.skip(f"native core not built: {transport_core.NATIVE_ERROR}")
    net = Wire()
    # a reliable pull: no deadline, so only the sender's silence can end a dead transfer
    recv = transport_core.recv_session(
        net.ports[WORKER], PLAN, 0, pull=True, senders=[wire.PS_RANK], required=(1.0,) * 3,
        options=ReceiveOptions(deadline=float("inf"), absent_timeout=3.0), core=core)
    hdr = wire.pack_header(wire.KIND_DATA, wire.FLAG_PULL, JOB, wire.PS_RANK, 0, 0, 4, 200, 0, 0)
    recv.on_packet(net.ports[WORKER].parse(hdr + np.ones(50, ">f4").tobytes(), PS), 1.0)
    recv.tick(3.9)                                 # silent 2.9 s: still waiting
    assert recv.silent(3.9) == []
    assert recv.silent(4.1) == [wire.PS_RANK]
    with pytest.raises(PeerTimeout, match="sent nothing for 3.0 s"):
        recv.tick(4.1)


def _data_sent(port: Port) -> int:
    return sum(1 for d in port.take() if wire.unpack_header(d.data).kind == wire.KIND_DATA)


def test_a_flood_of_pull_reqs_sends_each_chunk_at_most_once_more_per_probe_interval():
    """PULL_REQ reflection: a stream of them (a spoofed source, or --packet-mac off) gets what
    one gets; the worker's own cadence (one per PULL_REQ_EVERY_PROBES intervals) is honoured."""
    port = Port(JOB, wire.PS_RANK, lambda: 0.0)
    send = SendSession(port, WORKER, 0, PLAN, _layers(0), 0, pull=True, options=SendOptions())
    first_pass = 0
    for _ in range(4):                                         # bursts of 32
        send.tick(0.0)
        first_pass += len(port.take())
    assert first_pass == sum(PLAN.chunk_counts)                # nothing arrives, nothing ACKed
    req = port.parse(wire.pack_header(wire.KIND_PULL_REQ, wire.FLAG_PULL, JOB, 0, 0, 0), WORKER)
    sent = 0
    for i in range(100):                                       # 100 PULL_REQs in 10 ms
        t = 0.1 + i * 0.0001
        send.on_packet(req, t)
        send.tick(t)
        sent += _data_sent(port)
    assert sent == first_pass                                  # one resend of each, not 100
    assert port.counters["drop_pull_req_rate"] == 99
    send.on_packet(req, 0.2)                                   # the worker asks again later
    again = 0
    for _ in range(4):
        send.tick(0.2)
        again += _data_sent(port)
    assert again == first_pass


def test_a_pull_req_that_crossed_the_pulls_first_data_resends_only_what_had_its_round_trip():
    """The worker asks on its own clock, so its PULL_REQ can cross the pull's first DATA: once
    the session has measured the path, a chunk sent less than a retransmission timeout before
    the request came stays in flight (the request says nothing about it); older ones go again."""
    port = Port(JOB, wire.PS_RANK, lambda: 0.0)
    send = SendSession(port, WORKER, 0, PLAN, _layers(0), 0, pull=True,
                       options=SendOptions(probe_interval=0.02))
    first_pass = 0
    for _ in range(4):
        send.tick(0.0)
        first_pass += _data_sent(port)
    entries = wire.pack_ack_entries([(0, 0)])
    ack = wire.pack_header(wire.KIND_ACK, wire.FLAG_PULL, JOB, 0, 0, 0, payload_len=len(entries))
    send.on_packet(port.parse(ack + entries, WORKER), 0.05)              # srtt 50 ms, rttvar 25: RTO 150 ms
    assert send.rtt.timeout(0.02) == pytest.approx(0.15)
    req = port.parse(wire.pack_header(wire.KIND_PULL_REQ, wire.FLAG_PULL, JOB, 0, 0, 0), WORKER)
    send.on_packet(req, 0.06)                                 # 60 ms after the first pass
    send.tick(0.06)
    assert _data_sent(port) == 0
    send.on_packet(req, 0.16)                                 # a timeout after it: lost
    resent = 0
    for _ in range(4):
        send.tick(0.16)
        resent += _data_sent(port)
    assert resent == first_pass - 1                           # all but the acknowledged one


# A layer three BITMAPs long between two small ones, one element per chunk.
WIDE_PLAN = ChunkPlan([7, 3 * SEGMENT_CHUNKS, 5], 1)


def test_a_probe_answer_covers_a_large_layer_in_segments_in_turn_with_the_others():
    answers = ProbeAnswers()
    probe = wire.HEADER_LEN + probe_padding(WIDE_PLAN)    # pays for two full segments
    seg = SEGMENT_CHUNKS
    assert bitmap_bytes(seg) == wire.HEADER_LEN + wire.MAX_DATA_PAYLOAD - TAG_BYTES
    got = [answers.segments(WIDE_PLAN, probe) for _ in range(3)]
    # each answer goes on where the last stopped, and wraps round to the first layer
    assert got == [[(0, 0, 7), (1, 0, seg)], [(1, seg, seg), (1, 2 * seg, seg)],
                   [(2, 0, 5), (0, 0, 7), (1, 0, seg)]]
    # a layer that fits one BITMAP is answered whole, at chunk 0
    small = ChunkPlan([2000, 500, 100], 50)
    assert ProbeAnswers().segments(small, 10_000) == [(0, 0, 40), (1, 0, 10), (2, 0, 2)]


def _probe_answers(probe_interval: float, probes: int, every: float,
                   core: str = "python") -> tuple[int, int]:
    """`probes` PROBEs of one sender `every` s apart to a receiver (on `core`) of a job that
    probes every `probe_interval` s: (answered, refused by the rate)."""
    port = Port(JOB, wire.PS_RANK, lambda: 0.0)
    recv = transport_core.recv_session(
        port, PLAN, 0, pull=False, senders=[0], required=(1.0,) * 3,
        options=ReceiveOptions(deadline=60.0, probe_interval=probe_interval), core=core)
    probe = wire.pack_header(wire.KIND_PROBE, 0, JOB, 0, wire.ALL_LAYERS, 0)
    answered = 0
    for i in range(probes):
        recv.on_packet(port.parse(probe, WORKER), i * every)
        answered += any(wire.unpack_header(d.data).kind == wire.KIND_BITMAP for d in port.take())
    return answered, port.counters["drop_probe_rate"]


@pytest.mark.parametrize("core", transport_core.CORES)
def test_probes_are_answered_at_the_jobs_probe_rate_and_a_flood_is_not(core):
    if core == "native" and not transport_core.native_available():
        pytest.skip(f"native core not built: {transport_core.NATIVE_ERROR}")
    # a sender with a full window probes once a probe interval (ns-3's 10 Gb/s runs: 0.25 ms)
    assert _probe_answers(0.00025, 100, 0.00025, core) == (100, 0)
    # a fixed 200 answers a second (the default interval's rate) refused most of them
    answered, refused = _probe_answers(0.02, 100, 0.00025, core)
    assert answered < 20 and refused == 100 - answered
    # a flood at one instant gets the burst only, whatever the interval
    assert _probe_answers(0.00025, 100, 0.0, core) == (ANSWER_BURST, 100 - ANSWER_BURST)


@pytest.mark.slow
def test_holes_in_every_segment_of_a_large_layer_are_all_repaired():
    """A reliable push of a layer of 3 x SEGMENT_CHUNKS chunks (34,176) that loses 4 chunks of
    each of its segments in the first pass: every BITMAP segment is merged at its offset, and
    exactly the 12 lost chunks (and those of the small layers) are resent."""
    seg = SEGMENT_CHUNKS
    holes = {(1, k * seg + j) for k in range(3) for j in (0, 1, seg // 2, seg - 1)} | {(0, 3), (2, 4)}
    net = Wire(per_packet=0.0, loss=lambda rng, hdr: (not hdr.flags & wire.FLAG_RETX
                                                      and (hdr.layer_id, hdr.chunk_seq) in holes))
    rng = np.random.default_rng(0)
    layers = [rng.normal(size=n).astype(np.float32) for n in WIDE_PLAN.layer_sizes]
    recv = RecvSession(net.ports[PS], WIDE_PLAN, 0, pull=False, senders=[0], required=(1.0,) * 3,
                       options=ReceiveOptions(deadline=30.0))
    send = SendSession(net.ports[WORKER], PS, wire.PS_RANK, WIDE_PLAN, layers, 0, pull=False,
                       options=SendOptions(burst=4096))
    net.routers[PS].add(recv)
    net.routers[WORKER].add(send)
    net.run(lambda: send.done and recv.done)
    assert net.data_dropped == len(holes) == 14
    assert send.stats.retransmissions == 14 and send.stats.closed_by == "complete"
    assert recv.fractions()[0] == [1.0, 1.0, 1.0]
    assert all(np.array_equal(a, b) for a, b in zip(recv.senders[0].buffer.values, layers))


def test_a_bitmap_segment_is_merged_at_its_chunk_and_one_outside_its_layer_is_dropped():
    net = Wire()
    send = SendSession(net.ports[WORKER], PS, wire.PS_RANK, PLAN, _layers(0), 0, pull=False,
                       options=SendOptions())
    port = net.ports[WORKER]

    def bitmap(layer: int, first: int, payload: bytes) -> None:
        dg = wire.pack_header(wire.KIND_BITMAP, 0, JOB, wire.PS_RANK, layer, 0,
                              payload_len=len(payload), chunk_seq=first) + payload
        send.on_packet(port.parse(dg, PS), 0.0)

    bitmap(0, 8, wire.pack_bitmap([True] * 8))              # chunks 8..15 of layer 0
    bitmap(1, 8, wire.pack_bitmap([True] * 8))              # cut at layer 1's end: 8, 9
    assert np.flatnonzero(send.arrived).tolist() == [*range(8, 16), 48, 49]
    bitmap(0, 40, b"\xff")                                  # layer 0 has chunks 0..39
    bitmap(0, 0, b"")
    assert port.counters["drop_corrupt"] == 1 and port.counters["drop_truncated"] == 1
    assert int(send.arrived.sum()) == 10


def _lose_once(*chunks):
    """Lose the first send of layer-0 chunks `chunks` (their resends get through)."""
    return lambda rng, hdr: (not hdr.flags & wire.FLAG_RETX and hdr.layer_id == 0
                             and hdr.chunk_seq in chunks)


def test_a_chunk_later_acks_show_missing_is_resent_without_waiting_for_a_probe():
    """Fast repair (RACK): a lost chunk in the middle of a reliable transfer is resent as soon
    as ACKs of chunks sent after it arrive and its round trip has passed, long before the
    loss timer (INITIAL_RTO before the window has a sample) would send a probe."""
    net = Wire(delay=0.005, loss=_lose_once(5))
    send, recv = _push(net, 0, LayerBounds.fixed(3, 0.0, "tensor"), SendOptions(window=10))
    assert send.stats.closed_by == "complete" and recv.fractions()[0] == [1.0, 1.0, 1.0]
    assert send.stats.retransmissions == send.fast_repairs == 1
    assert send.stats.probes == 0
    assert net.now < 0.2                        # made-up time: a few round trips of 10 ms


def test_loss_the_budget_covers_is_not_resent_and_loss_beyond_it_is():
    bounds = LayerBounds.fixed(3, 0.1, "tensor")     # 260 elements: 5 chunks of 50
    net = Wire(delay=0.005, loss=_lose_once(3, 9, 15))
    send, _ = _push(net, 0, bounds, SendOptions(window=10))
    assert send.stats.closed_by == "bound" and send.stats.retransmissions == 0
    net = Wire(delay=0.005, loss=_lose_once(*range(3, 24, 3)))       # 7 lost > 5
    send, recv = _push(net, 0, bounds, SendOptions(window=10))
    assert send.stats.closed_by == "bound" and send.stats.probes == 0
    assert send.stats.retransmissions == send.fast_repairs == 2     # the 6th and 7th only


def test_the_packet_that_fills_the_window_is_acknowledged_at_once():
    """ACK_NOW: with a window of 10 and ACKs of 16 chunks held up to `ack_delay`, no window
    waits for the receiver's ACK timer (here 1 s of made-up time)."""
    net = Wire(delay=0.001)
    recv = RecvSession(net.ports[PS], PLAN, 0, pull=False, senders=[0], required=(1.0,) * 3,
                       options=ReceiveOptions(ack_delay=1.0))
    send = SendSession(net.ports[WORKER], PS, wire.PS_RANK, PLAN, _layers(0), 0, pull=False,
                       options=SendOptions(window=10))
    net.routers[PS].add(recv)
    net.routers[WORKER].add(send)
    net.run(lambda: send.done and recv.done)
    assert send.stats.closed_by == "complete" and net.now < 0.1


def test_an_ack_repeats_the_previous_acks_entries():
    port = Port(JOB, wire.PS_RANK, lambda: 0.0)
    recv = RecvSession(port, PLAN, 0, pull=False, senders=[0], required=(1.0,) * 3,
                       options=ReceiveOptions(ack_every=2))
    chunks = PLAN.split(_layers(0))
    for c in chunks[:4]:
        payload = c.values.astype(">f4").tobytes()
        data = wire.pack_header(wire.KIND_DATA, 0, JOB, 0, c.layer, 0, c.mag_class, len(payload),
                                c.seq, c.offset) + payload
        recv.on_packet(port.parse(data, WORKER), 0.0)
    acks = [wire.unpack_ack_entries(wire.unpack_header(d.data) and d.data[wire.HEADER_LEN:])
            for d in port.take() if wire.unpack_header(d.data).kind == wire.KIND_ACK]
    assert acks == [[(0, 0), (0, 1)], [(0, 2), (0, 3), (0, 0), (0, 1)]]


def test_a_send_group_interleaves_its_peers_so_their_transfers_end_together():
    port = Port(JOB, wire.PS_RANK, lambda: 0.0)
    peers = {0: ("10.0.0.2", 19527), 1: ("10.0.0.3", 19527)}
    group = SendGroup([SendSession(port, addr, rank, PLAN, _layers(0), 0, pull=True,
                                   options=SendOptions(burst=8))
                       for rank, addr in peers.items()])
    assert group.tick(0.0) == 0.0                  # bursts spent: call again at once
    out = [d.addr for d in port.take()]
    assert out == [peers[0], peers[1]] * 8         # one each in turn, not 8 then 8
