"""Receiver early close, ACK/BITMAP/STOP, and a sender that resends only the missing chunks.

Real UDP sockets on 127.0.0.1; the peer side is a plain socket the test scripts by hand."""
import socket
import time

import numpy as np
import pytest

from hosts import wire
from hosts.errors import PeerTimeout
from hosts.transport.chunking import ChunkPlan
from hosts.transport.endpoint import Endpoint
from hosts.transport.probe_answer import probe_padding
from hosts.transport.mux import Mux
from hosts.transport.receiver import ReceiveOptions, RecvSession
from hosts.transport.sender import SendOptions, SendSession, new_window

JOB = 9


@pytest.fixture
def peer():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    s.settimeout(2.0)
    yield s
    s.close()


@pytest.fixture
def endpoint():
    ep = Endpoint(("127.0.0.1", 0), JOB, wire.PS_RANK)
    yield ep
    ep.close()


def _data(plan, layers, layer, seq, rank=0, round_=0, flags=0, job=JOB):
    vals = layers[layer][plan.offset(layer, seq):plan.offset(layer, seq) + plan.length(layer, seq)]
    payload = vals.astype(">f4").tobytes()
    return wire.pack_header(wire.KIND_DATA, flags, job, rank, layer, round_, 0, len(payload), seq,
                            plan.offset(layer, seq)) + payload


def _recv_kinds(sock, until_kind, limit=200):
    """Headers received on `sock` up to and including the first of kind `until_kind`."""
    out = []
    for _ in range(limit):
        data, _ = sock.recvfrom(65535)
        hdr = wire.unpack_header(data)
        out.append((hdr, data[wire.HEADER_LEN:]))
        if hdr.kind == until_kind:
            return out
    raise AssertionError("kind never arrived")


def _pump(mux, cond, timeout=2.0):
    mux.run(cond, timeout=timeout)


def test_receiver_closes_early_at_the_bound_without_the_missing_chunks(endpoint, peer):
    plan = ChunkPlan([100, 20], 10)          # 10 + 2 chunks
    layers = [np.arange(100, dtype=np.float32), np.arange(20, dtype=np.float32) + 0.5]
    session = RecvSession(endpoint, plan, 0, pull=False, senders=[0], required=(0.8, 1.0),
                          options=ReceiveOptions(deadline=30.0))
    mux = Mux(endpoint)
    mux.add(session)
    # send layer 1 fully and 8 of 10 chunks of layer 0 (chunks 3 and 7 "lost")
    for seq in (0, 1):
        peer.sendto(_data(plan, layers, 1, seq), endpoint.address)
    for seq in (0, 1, 2, 4, 5, 6, 8, 9):
        peer.sendto(_data(plan, layers, 0, seq), endpoint.address)
    _pump(mux, lambda: session.done)
    state = session.senders[0]
    assert state.closed_by == "bound"
    assert session.fractions()[0] == [0.8, 1.0]
    got = _recv_kinds(peer, wire.KIND_STOP)
    acked = {tuple(e) for h, p in got if h.kind == wire.KIND_ACK for e in wire.unpack_ack_entries(p)}
    assert (0, 3) not in acked and (0, 7) not in acked
    # a PROBE after the close is answered with STOP again (lost STOP costs one probe)
    peer.sendto(wire.pack_header(wire.KIND_PROBE, 0, JOB, 0, wire.ALL_LAYERS, 0), endpoint.address)
    for pkt in endpoint.receive(1.0):
        mux.dispatch(pkt, time.monotonic())
    assert _recv_kinds(peer, wire.KIND_STOP)[-1][0].kind == wire.KIND_STOP
    # delivered values are exact, holes untouched
    buf = state.buffer
    assert np.array_equal(buf.values[0][buf.delivered[0]], layers[0][buf.delivered[0]])
    assert not buf.delivered[0][30:40].any()


def test_receiver_answers_probe_with_per_layer_bitmap(endpoint, peer):
    plan = ChunkPlan([40, 10], 10)
    layers = [np.ones(40, np.float32), np.ones(10, np.float32)]
    session = RecvSession(endpoint, plan, 4, pull=True, senders=[wire.PS_RANK],
                          required=(1.0, 1.0), options=ReceiveOptions(deadline=30.0))
    mux = Mux(endpoint)
    mux.add(session)
    for seq in (0, 2):
        peer.sendto(_data(plan, layers, 0, seq, rank=wire.PS_RANK, round_=4, flags=wire.FLAG_PULL),
                    endpoint.address)
    padding = bytes(probe_padding(plan))     # as a SendSession pads it: pays for every BITMAP
    peer.sendto(wire.pack_header(wire.KIND_PROBE, wire.FLAG_PULL, JOB, wire.PS_RANK,
                                 wire.ALL_LAYERS, 4, payload_len=len(padding)) + padding,
                endpoint.address)
    deadline = time.monotonic() + 2
    bitmaps = {}
    while len(bitmaps) < 2 and time.monotonic() < deadline:
        for pkt in endpoint.receive(0.1):
            mux.dispatch(pkt, time.monotonic())
        peer.settimeout(0.1)
        try:
            while True:
                data, _ = peer.recvfrom(65535)
                hdr = wire.unpack_header(data)
                if hdr.kind == wire.KIND_BITMAP:
                    assert hdr.flags & wire.FLAG_PULL
                    bitmaps[hdr.layer_id] = wire.unpack_bitmap(data[wire.HEADER_LEN:],
                                                               plan.chunk_counts[hdr.layer_id])
        except socket.timeout:
            pass
    assert bitmaps[0].tolist() == [True, False, True, False]
    assert bitmaps[1].tolist() == [False]
    assert not session.done


def test_receiver_deadline_closes_a_transfer_that_cannot_reach_its_bound(endpoint, peer):
    plan = ChunkPlan([100], 10)
    layers = [np.ones(100, np.float32)]
    session = RecvSession(endpoint, plan, 0, pull=False, senders=[0], required=(0.9,),
                          options=ReceiveOptions(deadline=0.1))
    mux = Mux(endpoint)
    mux.add(session)
    for seq in range(5):
        peer.sendto(_data(plan, layers, 0, seq), endpoint.address)
    _pump(mux, lambda: session.done)
    state = session.senders[0]
    assert state.closed_by == "deadline"
    assert state.closed_at - state.first_data >= 0.1
    assert session.fractions()[0] == [0.5]
    assert _recv_kinds(peer, wire.KIND_STOP)[-1][0].kind == wire.KIND_STOP


def test_absent_sender_times_out_with_a_clear_message(endpoint):
    plan = ChunkPlan([10], 10)
    session = RecvSession(endpoint, plan, 0, pull=False, senders=[0, 1], required=(1.0,),
                          options=ReceiveOptions(absent_timeout=0.1),
                          sender_names={1: "worker rank 1"})
    mux = Mux(endpoint)
    mux.add(session)
    with pytest.raises(PeerTimeout, match="worker rank 0|worker rank 1|sender rank 0"):
        _pump(mux, lambda: session.done)


def test_sender_resends_only_missing_chunks_until_stop(peer):
    ep = Endpoint(("127.0.0.1", 0), JOB, 2)
    try:
        plan = ChunkPlan([50, 10], 10)
        layers = [np.arange(50, dtype=np.float32), np.arange(10, dtype=np.float32)]
        sender = SendSession(ep, peer.getsockname(), wire.PS_RANK, plan, layers, 6, pull=False,
                             options=SendOptions(probe_interval=0.05, first_probe_delay=0.0))
        mux = Mux(ep)
        mux.add(sender)
        mux.run(lambda: sender.stats.probes >= 1, timeout=2)
        first = _recv_kinds(peer, wire.KIND_PROBE)
        data = [(h.layer_id, h.chunk_seq) for h, _ in first if h.kind == wire.KIND_DATA]
        assert sorted(data) == sorted([(0, s) for s in range(5)] + [(1, 0)])
        assert all(h.worker_rank == 2 and h.round == 6 and h.job_id == JOB for h, _ in first)
        # receiver has layer 0 chunks 0, 2, 4 and all of layer 1
        for layer, bits in ((0, [1, 0, 1, 0, 1]), (1, [1])):
            peer.sendto(wire.pack_header(wire.KIND_BITMAP, 0, JOB, wire.PS_RANK, layer, 6,
                                         payload_len=1) + wire.pack_bitmap(bits), ep.address)
        mux.run(lambda: sender.stats.probes >= 2, timeout=2)
        again = _recv_kinds(peer, wire.KIND_PROBE)
        resent = [(h.layer_id, h.chunk_seq) for h, _ in again if h.kind == wire.KIND_DATA]
        assert sorted(resent) == [(0, 1), (0, 3)]
        assert all(h.flags & wire.FLAG_RETX for h, _ in again if h.kind == wire.KIND_DATA)
        peer.sendto(wire.pack_header(wire.KIND_STOP, 0, JOB, wire.PS_RANK, wire.ALL_LAYERS, 6),
                    ep.address)
        mux.run(lambda: sender.done, timeout=2)
        assert sender.stats.retransmissions == 2
    finally:
        ep.close()


def test_sender_gives_up_on_a_silent_peer(peer):
    ep = Endpoint(("127.0.0.1", 0), JOB, 0)
    try:
        plan = ChunkPlan([10], 10)
        sender = SendSession(ep, peer.getsockname(), wire.PS_RANK, plan, [np.ones(10)], 0,
                             pull=False, options=SendOptions(peer_timeout=0.1),
                             peer_name="parameter server")
        mux = Mux(ep)
        mux.add(sender)
        with pytest.raises(PeerTimeout, match="parameter server .* did not answer"):
            mux.run(lambda: sender.done, timeout=5)
    finally:
        ep.close()


def test_priority_hints_mark_small_chunks_droppable():
    ep = Endpoint(("127.0.0.1", 0), JOB, 0)
    try:
        plan = ChunkPlan([8], 4)
        layers = [np.array([0.01] * 4 + [1.0] * 4, dtype=np.float32)]
        s = SendSession(ep, ("127.0.0.1", 9), 0, plan, layers, 0, pull=False, options=SendOptions())
        (f_small, tos_small), (f_large, tos_large) = s._marks
        assert f_small & wire.FLAG_DROPPABLE and tos_small & 3 == wire.ECN_NOT_ECT
        assert not f_large & wire.FLAG_DROPPABLE and tos_large & 3 == wire.ECN_ECT0
        plain = SendSession(ep, ("127.0.0.1", 9), 0, plan, layers, 0, pull=False,
                            options=SendOptions(priority_hints=False))
        assert all(m == (0, 0) for m in plain._marks)
        pull = SendSession(ep, ("127.0.0.1", 9), 0, plan, layers, 0, pull=True, options=SendOptions())
        assert all(not f & wire.FLAG_DROPPABLE and f & wire.FLAG_PULL for f, _ in pull._marks)
        critical = SendSession(ep, ("127.0.0.1", 9), 0, plan, layers, 0, pull=False,
                               options=SendOptions(), critical_layers=frozenset({0}))
        assert all(f & wire.FLAG_CRITICAL and not f & wire.FLAG_DROPPABLE and t & 3 == wire.ECN_ECT0
                   for f, t in critical._marks)
    finally:
        ep.close()


def test_pacing_spreads_data_packets_over_time():
    ep = Endpoint(("127.0.0.1", 0), JOB, 0)
    sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        sink.bind(("127.0.0.1", 0))
        plan = ChunkPlan([100], 10)
        sender = SendSession(ep, sink.getsockname(), wire.PS_RANK, plan, [np.ones(100)], 0,
                             pull=False, options=SendOptions(pace_pps=100.0))
        t0 = sender._next_send
        wake = sender.tick(t0)                    # one packet now, the next one 10 ms later
        assert sender.stats.data_packets == 1 and wake == pytest.approx(t0 + 0.01)
        sender.tick(t0 + 0.005)
        assert sender.stats.data_packets == 1
        sender.tick(t0 + 0.0101)
        assert sender.stats.data_packets == 2
        sender.tick(t0 + 0.0501)                  # late tick: catches up by one slot only
        assert sender.stats.data_packets == 4
        unpaced = SendSession(ep, sink.getsockname(), wire.PS_RANK, plan, [np.ones(100)], 0,
                              pull=False, options=SendOptions(burst=4))
        unpaced.tick(t0)
        assert unpaced.stats.data_packets == 4    # one burst per tick, then reads replies
    finally:
        sink.close()
        ep.close()


def test_policy_marks_and_epoch_stamp_of_data_packets(peer):
    """The controller's policy: drop-eligible magnitude classes per layer replace the
    magnitude threshold, and every DATA packet carries the policy epoch followed."""
    ep = Endpoint(("127.0.0.1", 0), JOB, 0)
    try:
        plan = ChunkPlan([8], 4)
        layers = [np.array([0.01] * 4 + [1.0] * 4, dtype=np.float32)]
        probe = SendSession(ep, peer.getsockname(), wire.PS_RANK, plan, layers, 3, pull=False,
                            options=SendOptions())
        small_class, large_class = probe.mag_classes
        assert small_class < large_class
        s = SendSession(ep, peer.getsockname(), wire.PS_RANK, plan, layers, 3, pull=False,
                        options=SendOptions(droppable=(frozenset({large_class}),), policy_epoch=42,
                                            first_probe_delay=0.0))
        (f_small, _), (f_large, _) = s._marks
        # the policy's classes, not the threshold: the large chunk is eligible, the small not
        assert f_large & wire.FLAG_DROPPABLE and not f_small & wire.FLAG_DROPPABLE
        mux = Mux(ep)
        mux.add(s)
        mux.run(lambda: s.stats.probes >= 1, timeout=2)
        got = _recv_kinds(peer, wire.KIND_PROBE)
        stamps = {h.policy_epoch for h, _ in got if h.kind == wire.KIND_DATA}
        assert stamps == {42}
        assert all(h.policy_epoch == 0 for h, _ in got if h.kind != wire.KIND_DATA)
    finally:
        ep.close()


def test_probe_on_silence_holds_the_probe_while_acks_keep_coming(peer):
    ep = Endpoint(("127.0.0.1", 0), JOB, 2)
    try:
        plan = ChunkPlan([50], 10)
        sender = SendSession(ep, peer.getsockname(), wire.PS_RANK, plan, [np.arange(50, dtype=np.float32)], 3,
                             pull=False, options=SendOptions(probe_interval=0.3, probe_on_silence=True))
        mux = Mux(ep)
        mux.add(sender)
        mux.run(lambda: sender.stats.data_packets == 5, timeout=2)
        deadline = time.monotonic()
        for seq in range(5):
            # a new ACK every 0.1 s, closer together than the probe interval: the queue drains
            entry = wire.pack_ack_entries([(0, seq)])
            peer.sendto(wire.pack_header(wire.KIND_ACK, 0, JOB, wire.PS_RANK, 0, 3, payload_len=len(entry))
                        + entry, ep.address)
            deadline += 0.1
            mux.run(lambda: time.monotonic() >= deadline, timeout=2)
            assert sender.stats.probes == 0, f"probed while ACK {seq} was fresh"
        mux.run(lambda: sender.stats.probes >= 1, timeout=2)
        assert sender.arrived.all() and sender.stats.retransmissions == 0
    finally:
        ep.close()


def test_default_sender_probes_right_after_the_first_pass(peer):
    ep = Endpoint(("127.0.0.1", 0), JOB, 2)
    try:
        plan = ChunkPlan([50], 10)
        sender = SendSession(ep, peer.getsockname(), wire.PS_RANK, plan, [np.arange(50, dtype=np.float32)], 3,
                             pull=False, options=SendOptions(probe_interval=5.0))
        mux = Mux(ep)
        mux.add(sender)
        mux.run(lambda: sender.stats.probes >= 1, timeout=2)   # first_probe_delay, not 5 s
        assert sender.stats.data_packets == 5
    finally:
        ep.close()


def _data_with_telemetry(plan, layers, seq, qdepth, hops):
    vals = layers[0][plan.offset(0, seq):plan.offset(0, seq) + plan.length(0, seq)]
    payload = vals.astype(">f4").tobytes()
    return wire.pack_header(wire.KIND_DATA, 0, JOB, 0, 0, 0, 0, len(payload), seq, plan.offset(0, seq),
                            tele_max_qdepth=qdepth, tele_hops=hops) + payload


def test_receiver_keeps_the_deepest_queue_the_round_met(endpoint, peer):
    plan = ChunkPlan([30], 10)
    layers = [np.arange(30, dtype=np.float32)]
    session = RecvSession(endpoint, plan, 0, pull=False, senders=[0], required=(1.0,),
                          options=ReceiveOptions(deadline=30.0))
    mux = Mux(endpoint)
    mux.add(session)
    peer.sendto(_data_with_telemetry(plan, layers, 0, 0, 0), endpoint.address)   # no telemetry yet
    _pump(mux, lambda: session.senders[0].first_data is not None)
    assert session.max_qdepth is None
    for seq, depth in ((1, 41), (2, 17)):
        peer.sendto(_data_with_telemetry(plan, layers, seq, depth, 1), endpoint.address)
    _pump(mux, lambda: session.done)
    assert session.max_qdepth == 41


def _ack(seqs, round_=3):
    entry = wire.pack_ack_entries([(0, s) for s in seqs])
    return wire.pack_header(wire.KIND_ACK, 0, JOB, wire.PS_RANK, 0, round_, payload_len=len(entry)) + entry


def test_reno_window_limits_unacknowledged_packets_grows_per_ack_and_halves_on_loss(peer):
    ep = Endpoint(("127.0.0.1", 0), JOB, 2)
    try:
        plan = ChunkPlan([200], 10)            # 20 chunks
        sender = SendSession(ep, peer.getsockname(), wire.PS_RANK, plan, [np.arange(200, dtype=np.float32)], 3,
                             pull=False, options=SendOptions(window=4, probe_interval=0.1, cc="reno"))
        mux = Mux(ep)
        mux.add(sender)
        mux.run(lambda: sender.stats.data_packets == 4, timeout=2)
        stop = time.monotonic() + 0.05
        mux.run(lambda: time.monotonic() >= stop, timeout=2)
        assert sender.stats.data_packets == 4          # window full, nothing acknowledged
        peer.sendto(_ack([0, 1]), ep.address)          # 2 ACKed: window 6, 2 outstanding -> 4 more
        mux.run(lambda: sender.stats.data_packets == 8, timeout=2)
        stop = time.monotonic() + 0.05
        mux.run(lambda: time.monotonic() >= stop, timeout=2)
        assert sender.stats.data_packets == 8
        # silence: a probe; its bitmap says chunks 2..7 never arrived -> loss: window 6 -> 3
        mux.run(lambda: sender.stats.probes >= 1, timeout=2)
        bits = [1, 1] + [0] * 18
        peer.sendto(wire.pack_header(wire.KIND_BITMAP, 0, JOB, wire.PS_RANK, 0, 3, payload_len=3)
                    + wire.pack_bitmap(bits), ep.address)
        mux.run(lambda: sender.stats.data_packets >= 11, timeout=2)
        stop = time.monotonic() + 0.03
        mux.run(lambda: time.monotonic() >= stop, timeout=2)
        # window 3, nothing outstanding: 3 packets (the unsent chunks first, the lost ones after)
        assert sender.stats.data_packets == 11 and sender.window.cwnd == 3.0
    finally:
        ep.close()


def _ack_echoing(seqs, qdepth, round_):
    entry = wire.pack_ack_entries([(0, s) for s in seqs])
    return wire.pack_header(wire.KIND_ACK, 0, JOB, wire.PS_RANK, 0, round_, payload_len=len(entry),
                            tele_max_qdepth=qdepth) + entry


def _first_window_sent(ep, peer, options):
    """Round 3 of a 40-chunk tensor with a fresh window of `options`, run until its first
    4 packets went out: (mux, session, layers)."""
    layers = [np.arange(400, dtype=np.float32)]
    mux = Mux(ep)
    sender = SendSession(ep, peer.getsockname(), wire.PS_RANK, ChunkPlan([400], 10), layers, 3,
                         pull=False, options=options, window=new_window(options))
    mux.add(sender)
    mux.run(lambda: sender.stats.data_packets == 4, timeout=2)
    return mux, sender, layers


def _next_round(ended, mux, peer, layers, idle=0.0):
    """End `ended`'s round, wait `idle` s, run round 4 with the same window for 50 ms; its
    session."""
    ended.done = True
    mux.prune(4)
    time.sleep(idle)
    following = SendSession(ended.endpoint, peer.getsockname(), wire.PS_RANK, ended.plan, layers,
                            4, pull=False, options=ended.options, window=ended.window)
    mux.add(following)
    stop = time.monotonic() + 0.05
    mux.run(lambda: time.monotonic() >= stop, timeout=2)
    return following


@pytest.mark.parametrize("qdepth, cwnd", [(30, 8.0), (50, 4.0)])
def test_ecn_window_reads_the_echoed_depth_for_not_ect_data_and_carries_over_rounds(peer, qdepth, cwnd):
    """Drop-eligible DATA goes out Not-ECT, so no switch marks it: an ACK echoing a queue deeper
    than the switches' ECN threshold counts its packets as marked (the first marked window
    halves). The window a round ends with is where the next round's transfer starts."""
    ep = Endpoint(("127.0.0.1", 0), JOB, 2)
    try:
        options = SendOptions(window=4, probe_interval=0.5, cc="ecn", mark_depth=40,
                              droppable_below=8)       # 40 chunks, every one drop-eligible
        mux, sender, layers = _first_window_sent(ep, peer, options)
        window = sender.window
        for _ in range(4):
            data, _ = peer.recvfrom(65535)
            assert wire.unpack_header(data).flags & wire.FLAG_DROPPABLE
        peer.sendto(_ack_echoing([0, 1, 2, 3], qdepth, 3), ep.address)
        mux.run(lambda: sender.window.stats.marked > 0 or sender.stats.data_packets > 4, timeout=2)
        assert window.cwnd == cwnd                 # 4 + 4 acknowledged; halved if marked
        assert sender.window_summary()["cc_mark_cuts"] == (1 if qdepth > 40 else 0)
        following = _next_round(sender, mux, peer, layers)
        assert following.stats.data_packets == int(cwnd)
        assert following.window_summary()["cc_mark_cuts"] == 0     # this round's own count
    finally:
        ep.close()


def test_window_carried_over_an_idle_gap_restarts_from_the_initial_window(peer):
    """A window that grew in one round (no marks: slow start) and then sat idle for longer than
    the probe interval (the sender's loss timer) starts the next round from the initial
    window, as kernel TCP restarts after an idle RTO, instead of sending its whole size at once."""
    ep = Endpoint(("127.0.0.1", 0), JOB, 2)
    try:
        mux, sender, layers = _first_window_sent(ep, peer, SendOptions(window=4, probe_interval=0.05))
        window = sender.window
        peer.sendto(_ack_echoing([0, 1, 2, 3], 0, 3), ep.address)
        mux.run(lambda: sender.stats.data_packets == 12, timeout=2)
        assert window.cwnd == 8.0
        following = _next_round(sender, mux, peer, layers, idle=0.12)   # > 2 probe intervals
        assert following.stats.data_packets == 4 and window.cwnd == 4.0
        assert following.window_summary()["cc_idle_cuts"] == 1
    finally:
        ep.close()


def test_receiver_acks_echo_ce_marks_and_queueing_delay_and_stop_names_the_reason(endpoint, peer):
    """The sender's congestion signals: per ACK entry, whether its DATA arrived CE-marked (the
    IPv4 ECN bits as received); in the ACK header, the largest queueing delay and depth the
    switches stamped into the DATA it acknowledges. A STOP names why the transfer closed."""
    plan = ChunkPlan([40], 10)
    layers = [np.arange(40, dtype=np.float32)]
    session = RecvSession(endpoint, plan, 0, pull=False, senders=[0], required=(0.7,),
                          options=ReceiveOptions(deadline=30.0, ack_every=2, scope="tensor"))
    mux = Mux(endpoint)
    mux.add(session)
    for seq, tos, qdelay in ((0, wire.ECN_ECT0, 300), (1, wire.ECN_CE, 2500), (2, wire.ECN_CE, 0)):
        peer.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, tos)
        vals = layers[0][plan.offset(0, seq):plan.offset(0, seq) + plan.length(0, seq)]
        payload = vals.astype(">f4").tobytes()
        peer.sendto(wire.pack_header(wire.KIND_DATA, 0, JOB, 0, 0, 0, 0, len(payload), seq,
                                     plan.offset(0, seq), tele_max_qdepth=seq + 4, tele_hops=1,
                                     tele_qdelay_us=qdelay) + payload, endpoint.address)
        time.sleep(0.01)    # one packet per receive batch: the ACK of 2 goes out before seq 2
    _pump(mux, lambda: session.done)
    assert session.senders[0].closed_by == "bound"           # 3 of 4 chunks >= 0.7
    got = _recv_kinds(peer, wire.KIND_STOP)
    acks = [(h, wire.unpack_ack_marks(p)) for h, p in got if h.kind == wire.KIND_ACK]
    assert acks[0][1] == [(0, 0, False), (0, 1, True)]
    assert (acks[0][0].tele_qdelay_us, acks[0][0].tele_max_qdepth) == (2500, 5)
    stop = got[-1][0]
    assert wire.STOP_REASON_NAMES[stop.chunk_seq] == "bound"
