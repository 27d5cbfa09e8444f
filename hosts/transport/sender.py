"""Sending side of one tensor transfer: paced out-of-order DATA, probe, resend only the missing."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from hosts import wire
from hosts.errors import PacketError, PeerTimeout
from hosts.transport.bounds import LossBudget
from hosts.transport.chunking import ChunkPlan, send_order
from hosts.transport import core as transport_core
from hosts.transport.congestion import SWITCH_ECN_THRESHOLD, RttEstimate, Window
from hosts.transport.data_frames import round_frames
from hosts.transport.port import Port, Received
from hosts.transport.port_pacer import SLACK_S, WIRE_OVERHEAD_BYTES, PortPacer
from hosts.transport.probe_answer import probe_padding

if transport_core.NATIVE_ERROR is None:
    from hosts.transport import _native
else:   # not built: resolve() never picks the native core
    _native = None

INFINITY = float("inf")
_RUN_BURST, _RUN_WINDOW, _RUN_IDLE, _RUN_PACED = 1, 2, 3, 4   # send_run's stops (0: done)


@dataclass(frozen=True)
class SendOptions:
    """Pacing, probing, marking and congestion control of a sender.

    pace_pps: DATA packets per second (0 = as fast as the socket takes them, `burst` at a time).
    priority_hints: set DROPPABLE, magnitude-class DSCP and ECN per chunk (off = no switch help).
    plain: every packet carries FLAG_PLAIN (the software-MLT baseline; implies no priority
        hints); its DATA is ECT(0) under `cc` 'ecn' (switches may mark it CE), else TOS 0.
    droppable_below: chunks of a magnitude class below this are drop-eligible (push stage only;
        never chunks of a critical layer, whose bound is 0).
    droppable: per layer the drop-eligible magnitude classes (the controller's policy); when
        set it replaces `droppable_below`.
    order: first-pass order of chunks (chunking.ORDERS): 'interleave' (every layer spread over
        the pass, the default), 'shuffle' (seeded by `seed`, the job and the round) or 'layer'.
    policy_epoch: stamped on every DATA packet (the job policy generation followed; 0 = none).
    probe_on_silence: probe only after `probe_interval` without new ACKs (while the receiver's
        ACKs keep coming, a queue is still draining and nothing is known lost); off = the first
        probe right after the first pass, then one every `probe_interval`.
    window: initial congestion window in DATA packets (0 = no window: everything goes out at
        once). With a window, at most that many packets are unacknowledged; it grows per ACK
        and shrinks by `cc` (congestion.Window). Implies probe_on_silence, with the silence
        TCP's retransmission timeout when that is longer than `probe_interval` (the window's
        RTT, measured from ACKs of chunks sent once); a BITMAP then calls lost only chunks sent
        at least one smoothed RTT before the probe (control overtakes queued DATA).
    cc: 'ecn' (DCTCP-like on CE marks and telemetry queueing delay; loss only beyond the bound)
        or 'reno' (halve on every loss a BITMAP or the ACKs show).
    cc_loss: with 'ecn', whether a loss beyond the bound cuts the window 'always' or only when
        the ACKs showed congestion shortly before ('congested': congestion.Window).
    delay_target_us: with 'ecn', an ACK echoing a longer path queueing delay counts as marked.
    mark_depth: with 'ecn', the Not-ECT packets of an ACK echoing a deeper switch queue count
        as marked (the switches' ECN threshold, in packets).
    port_mbps: the line rate of the sender's own port (0 = not known). When set, DATA goes out
        no faster than the port carries (hosts/transport/port_pacer.py): one budget per port,
        shared by every session on it (the PS's pull to all its workers), whatever their number.
    """

    pace_pps: float = 0.0
    burst: int = 32
    probe_interval: float = 0.02
    first_probe_delay: float = 0.002
    peer_timeout: float = 10.0
    priority_hints: bool = True
    plain: bool = False
    droppable_below: int = 4
    droppable: tuple[frozenset[int], ...] | None = None
    order: str = "interleave"
    seed: int = 0
    policy_epoch: int = 0
    probe_on_silence: bool = False
    window: int = 0
    cc: str = "ecn"
    cc_loss: str = "always"
    delay_target_us: int = 20_000
    mark_depth: int = SWITCH_ECN_THRESHOLD
    port_mbps: float = 0.0


def new_window(options: SendOptions) -> Window | None:
    """The congestion window `options` ask for (None with --window 0)."""
    if options.window <= 0:
        return None
    return Window(options.window, options.cc, 0, options.delay_target_us,
                  options.probe_interval, options.mark_depth, idle_rto=options.probe_interval,
                  loss_response=options.cc_loss)


# A chunk still unacknowledged when this many later transmissions were acknowledged stops
# holding the window (lost, or its ACK was, or it waits in a lower-priority queue).
REORDER_THRESHOLD = 3
# Fast repair (RACK, RFC 8985): a chunk sent before one that was acknowledged since is lost once
# it has been out for that chunk's round trip plus this fraction of the smoothed RTT (the
# reordering a switch's priority queues may add); then it is resent at once, no probe awaited.
REORDER_WINDOW = 0.25


@dataclass
class SendStats:
    data_packets: int = 0
    retransmissions: int = 0
    fast_resends: int = 0          # of those, queued on the ACKs' evidence (RACK), not by a timer
    probes: int = 0
    bytes_sent: int = 0
    started: float = 0.0
    finished: float = 0.0
    closed_by: str | None = None   # the reason the receiver's STOP named, if any

    @property
    def seconds(self) -> float:
        return max(self.finished - self.started, 0.0)


class SendSession:
    """Sends one round's tensor set to one peer until the peer says STOP.

    DATA goes out in `options.order`, paced and (with a window) congestion-controlled; ACK and
    BITMAP mark chunks as arrived; once everything was sent once the sender PROBEs, and each
    BITMAP queues only the missing chunks again (flag RETX). A receiver whose bound is met has
    closed already, so what a BITMAP asks for after the first pass is loss beyond the bound;
    during the first pass, missing chunks that the `budget` (bounds.LossBudget: what the
    receiver may leave missing; default none) still covers are not resent: the chunks still to
    come will close the round. PeerTimeout if the peer says nothing for `peer_timeout` s.
    Below the budget, loss does not shrink an 'ecn' window. `window` carries one peer's window
    over rounds (new_window(options)), as a TCP connection keeps its own; default: a fresh one.
    `core` (hosts/transport/core.py; None: the default) takes the chunks' magnitude classes
    (ChunkPlan.classes) and first-pass order (send_order), builds the DATA datagrams
    (hosts/transport/data_frames.py), runs `tick`'s send loop where no `pace_pps` applies
    (`_send_run`, native/send_run.cpp) and applies each ACK's entries (`_apply_ack`) natively
    or in Python: the same frames and decisions either way. `mag_classes`: every chunk's class,
    one byte each in ChunkPlan.split's order.
    """

    def __init__(self, endpoint: Port, peer: tuple[str, int], peer_rank: int,
                 plan: ChunkPlan, layers: list[np.ndarray], round_: int, *, pull: bool,
                 options: SendOptions, extra_flags: int = 0, peer_name: str = "peer",
                 critical_layers: frozenset[int] = frozenset(),
                 budget: LossBudget | None = None, window: Window | None = None,
                 core: str | None = None) -> None:
        self.endpoint = endpoint
        self.peer = peer
        self.peer_rank = peer_rank
        self.peer_name = peer_name
        self.plan = plan
        self.round = round_
        self.pull = pull
        self.options = options
        self.stage_flags = ((wire.FLAG_PULL if pull else 0) | extra_flags
                            | (wire.FLAG_PLAIN if options.plain else 0))
        self.critical_layers = critical_layers
        self._base = np.cumsum([0] + plan.chunk_counts[:-1]).tolist()
        native = transport_core.resolve(core, announce=False) == "native"
        # the frames and every chunk's magnitude class (ChunkPlan.split's order)
        self._frames, self.mag_classes = round_frames(plan, layers, endpoint.job_id, endpoint.rank,
                                                      round_, options.policy_epoch, native=native)
        # the native ACK pass's view of the plan: first chunk index and chunk count per layer
        self._ack_layout = ((np.array(self._base, dtype=np.int64),
                             np.array(plan.chunk_counts, dtype=np.int64)) if native else None)
        self._marks, self._not_ect = self._chunk_marks()
        # the native send loop (send_run): every chunk's flags and TOS, and where DATA goes
        self._run_marks = ((np.array([f for f, _ in self._marks], dtype=np.uint8),
                            np.array([t for _, t in self._marks], dtype=np.uint8))
                           if native else None)
        self._sink = endpoint.data_sink(self._frames)
        n_chunks = len(self.mag_classes)
        self.arrived = np.zeros(n_chunks, dtype=bool)
        self._queued = np.ones(n_chunks, dtype=bool)
        self._queue = send_order(plan, options.order,
                                 [options.seed, endpoint.job_id, round_, int(pull)], native=native)
        self._pos = 0
        self._sent_once = np.zeros(n_chunks, dtype=bool)
        now = endpoint.clock()
        self.stats = SendStats(started=now)
        self._next_send = now
        self._next_probe = INFINITY
        self.last_heard = now
        self.done = False
        self._silence = options.probe_on_silence or options.window > 0
        self.budget = budget if budget is not None else LossBudget.none(plan)
        self.window = window if window is not None else new_window(options)
        if self.window is not None:
            self.window.loss_budget = self.budget.total
        self._window_start = dataclasses.replace(self.window.stats) if self.window else None
        self._outstanding = np.zeros(n_chunks, dtype=bool)      # sent, neither ACKed nor known lost
        self._in_flight: int | None = 0     # _outstanding's count; None: count it again
        self._probe_padding = bytes(probe_padding(plan))   # pays for the answer's BITMAPs
        self._tx = np.zeros(n_chunks, dtype=np.int64)            # transmission number, last send
        self._tx_count = 0
        self._sent_at = np.zeros(n_chunks)                       # time of the last send
        self._resent = np.zeros(n_chunks, dtype=bool)
        self._probe_at = -INFINITY                               # when the last PROBE went out
        self._pull_req_ok_at = -INFINITY                         # when a PULL_REQ counts again
        # the round trip the loss timers use: the window's (kept over rounds) or this session's
        self.rtt = self.window.rtt if self.window is not None else RttEstimate()
        self._rack_sent = -INFINITY    # send time of the latest-sent chunk known delivered
        self._rack_rtt = 0.0           # and its round trip
        self._rack_wake = INFINITY     # when a chunk sent before it will count as lost
        self.fast_repairs = 0          # chunks resent on the ACKs' evidence, before any probe
        self._lost = np.zeros(n_chunks, dtype=bool)      # last send known lost (ACKs or BITMAP)
        self._fast = np.zeros(n_chunks, dtype=bool)      # queued again by RACK, not yet resent
        # what the sender's own port carries: one budget per port, shared by all its sessions
        self.pacer: PortPacer | None = endpoint.pacer(options.port_mbps)

    @property
    def active(self) -> bool:
        return not self.done

    def _marking(self, layer: int, mag_class: int) -> tuple[int, int]:
        """(flags, TOS) of the DATA packets of a chunk of `layer` and magnitude class
        `mag_class`. A chunk of a bound-0 layer always carries CRITICAL (LTP: must be
        delivered); with PLAIN the switches ignore it all the same."""
        critical = layer in self.critical_layers
        if self.options.plain or not self.options.priority_hints:
            tos = wire.ECN_ECT0 if self.options.plain and self.options.cc == "ecn" else 0
            return self.stage_flags | (wire.FLAG_CRITICAL if critical else 0), tos
        if critical:
            return self.stage_flags | wire.FLAG_CRITICAL, wire.data_tos(mag_class, False)
        eligible = self.options.droppable
        droppable = not self.pull and (mag_class < self.options.droppable_below
                                       if eligible is None else mag_class in eligible[layer])
        flags = self.stage_flags | (wire.FLAG_DROPPABLE if droppable else 0)
        return flags, wire.data_tos(mag_class, droppable)

    def _chunk_marks(self) -> tuple[list[tuple[int, int]], np.ndarray]:
        """Every chunk's (flags, TOS) (`_marking`, once per layer and class present) and
        whether its DATA goes out Not-ECT."""
        classes = self.mag_classes
        marks: list[tuple[int, int]] = []
        base = 0
        for layer, count in enumerate(self.plan.chunk_counts):
            of_class: list[tuple[int, int] | None] = [None] * 8
            for cls in set(classes[base:base + count]):
                of_class[cls] = self._marking(layer, cls)
            marks.extend(map(of_class.__getitem__, classes[base:base + count]))
            base += count
        not_ect = np.array([tos & 3 == wire.ECN_NOT_ECT for _, tos in marks], dtype=bool)
        return marks, not_ect

    def _send_chunk(self, idx: int, now: float, ack_now: bool = False) -> None:
        flags, tos = self._marks[idx]
        if ack_now:
            flags |= wire.FLAG_ACK_NOW
        retx = self._sent_once[idx]
        if retx:
            flags |= wire.FLAG_RETX
            self._resent[idx] = True
            self.stats.retransmissions += 1
            self.endpoint.counters["retransmissions"] += 1
            if self._fast[idx]:
                self.stats.fast_resends += 1
                self.endpoint.counters["fast_resends"] += 1
        self._fast[idx] = False
        nbytes = self.endpoint.send_data(self._frames, idx, flags, self.peer, tos)
        self._sent_once[idx] = True
        self._lost[idx] = False
        if self._in_flight is not None and not self._outstanding[idx]:
            self._in_flight += 1
        self._outstanding[idx] = True
        self._tx_count += 1
        self._tx[idx] = self._tx_count
        self._sent_at[idx] = now
        self.stats.data_packets += 1
        self.endpoint.counters["data_packets_sent"] += 1
        self.stats.bytes_sent += nbytes
        if self.pacer is not None:
            self.pacer.spend(nbytes, now)

    def tick(self, now: float, burst: int | None = None) -> float:
        """Send what pacing allows (at most `burst` DATA, default options.burst), probe when
        everything went out; the next time to call."""
        if self.done:
            return INFINITY
        if now - self.last_heard > self.options.peer_timeout:
            raise PeerTimeout(f"{self.peer_name} at {self.peer[0]}:{self.peer[1]} did not answer "
                              f"for {self.options.peer_timeout:.1f} s in round {self.round} "
                              f"(dead or unreachable)")
        pps = self.options.pace_pps
        sent = 0
        paced = INFINITY
        limit = self.options.burst if burst is None else burst
        native = self._run_marks is not None and pps <= 0
        while self._pos < len(self._queue):
            if native:   # the same loop in native code, but for an idle window's first send
                stop, idx, sent, paced = self._send_run(now, sent, limit)
                if stop == _RUN_BURST:
                    return now
                if stop == _RUN_PACED:
                    self.endpoint.counters["port_paced"] += 1
                    break
                if stop == _RUN_WINDOW:
                    if self._next_probe == INFINITY:
                        self._next_probe = now + self._loss_timer()
                    break
                if stop == _RUN_IDLE:
                    self._send_taken(idx, now, 0)
                    sent += 1
                continue
            if pps > 0 and self._next_send > now:
                return self._next_send
            if sent >= limit:
                return now
            if self.pacer is not None:
                paced = self.pacer.ready_at(now)
                if paced > now:      # the port's own queue is full: go on once it drained
                    self.endpoint.counters["port_paced"] += 1
                    break
                paced = INFINITY
            outstanding = self._outstanding_count() if self.window is not None else 0
            if self.window is not None and not self.window.allows(outstanding):
                # Window full: wait for ACKs; a probe after silence finds what was lost.
                if self._next_probe == INFINITY:
                    self._next_probe = now + self._loss_timer()
                break
            idx = self._queue[self._pos]
            self._pos += 1
            self._queued[idx] = False
            if self.arrived[idx]:
                continue
            self._send_taken(idx, now, outstanding)
            sent += 1
            if pps > 0:
                self._next_send = max(self._next_send, now - 1.0 / pps) + 1.0 / pps
        if self._next_probe == INFINITY and paced == INFINITY:
            self._next_probe = now + self._probe_delay()
        if now >= self._rack_wake:
            self._detect_lost(now)
            if self._pos < len(self._queue) and paced == INFINITY:
                return now                 # resend at once (paced: once the port drained)
        if now >= self._next_probe:
            self.endpoint.send_control(wire.KIND_PROBE, self.peer, self.round, self.stage_flags,
                                       payload=self._probe_padding)
            self.stats.probes += 1
            self._probe_at = now
            self._next_probe = now + self._loss_timer()
        return min(self._next_probe, self._rack_wake, paced)

    def _send_taken(self, idx: int, now: float, outstanding: int) -> None:
        """Send chunk `idx`, just taken from the queue, with `outstanding` chunks in flight."""
        if self.window is not None:
            self.window.on_send(now, outstanding)   # decays after idle (between rounds)
        # The last packet before the sender must wait (window full, or nothing left to
        # send) asks for its ACK at once: no window waits for the receiver's ACK timer.
        self._send_chunk(idx, now, ack_now=self._pos == len(self._queue) or (
            self.window is not None and not self.window.allows(outstanding + 1)))
        if self._pos == len(self._queue):
            self._next_probe = now + self._probe_delay()

    def _send_run(self, now: float, sent: int, limit: int) -> tuple[int, int, int, float]:
        """`tick`'s loop in native code (native/send_run.cpp) from the queue's position, `sent`
        DATA already sent in this tick and at most `limit`: (why it stopped, the chunk it took
        and left to send when the window was idle, DATA sent in this tick, when the port's
        queue takes more if that stopped it, else INFINITY)."""
        window = self.window
        flags, tos = self._run_marks
        pacer = self.pacer
        (self._pos, sent, self._in_flight, self._tx_count, stop, idx, retx, fast, packets,
         nbytes, probe_due, free_at, paced) = _native.send_run(
            self._queue, self._pos, sent, limit, self._outstanding_count(),
            int(window.cwnd) if window is not None else -1, self._tx_count, now, self._sink,
            self._frames, self.peer,
            None if pacer is None else (pacer.rate_bps, pacer.depth_s, pacer.free_at, SLACK_S,
                                        WIRE_OVERHEAD_BYTES),
            self.arrived, self._queued, self._sent_once, self._resent, self._fast, self._lost,
            self._outstanding, self._tx, self._sent_at, flags, tos)
        if pacer is not None:
            pacer.free_at = free_at
        if packets:
            if window is not None:
                window.on_send(now, 1)    # with packets in flight: only the send time noted
            self.stats.data_packets += packets
            self.stats.bytes_sent += nbytes
            self.endpoint.counters["data_packets_sent"] += packets
            if retx:
                self.stats.retransmissions += retx
                self.endpoint.counters["retransmissions"] += retx
            if fast:
                self.stats.fast_resends += fast
                self.endpoint.counters["fast_resends"] += fast
        if probe_due:
            self._next_probe = now + self._probe_delay()
        return stop, idx, sent, paced if stop == _RUN_PACED else INFINITY

    def _outstanding_count(self) -> int:
        """Chunks in flight (`_outstanding`), counted again only after a bulk change."""
        if self._in_flight is None:
            self._in_flight = int(self._outstanding.sum())
        return self._in_flight

    def _loss_timer(self) -> float:
        """How long the sender waits in silence before it probes: the probe interval, or with a
        window TCP's retransmission timeout from its RTT samples (1 s before the first) if that
        is longer (a standing queue makes a round trip longer than the probe interval)."""
        if self.window is None:
            return self.options.probe_interval
        return self.window.rtt.timeout(self.options.probe_interval)

    def _probe_delay(self) -> float:
        # First probe right after the first pass; after a resend, wait a full interval so a
        # persistently lossy path is not hammered.
        if self._silence:
            return self._loss_timer()
        return self.options.first_probe_delay if self.stats.probes == 0 else self.options.probe_interval

    def _known_lost(self) -> int:
        """Chunks a BITMAP showed missing (sent, not arrived, not in flight, not queued again)."""
        return int((self._sent_once & ~self.arrived & ~self._outstanding & ~self._queued).sum())

    def _missing_per_layer(self) -> list[int]:
        """Per layer, chunks sent and not known to have arrived."""
        gone = self._sent_once & ~self.arrived
        return [int(gone[b:b + c].sum()) for b, c in zip(self._base, self.plan.chunk_counts)]

    def _on_pull_req(self, now: float) -> None:
        """The receiver had nothing of this pull when it asked: queue again what it lacks.
        Honoured at most once per probe interval (a worker asks every PULL_REQ_EVERY_PROBES
        intervals), and a chunk sent within the last interval stays in flight: a flood of
        PULL_REQs with a spoofed source makes no chunk go out more than once per interval.
        A request crosses the pull's first DATA on the way (the worker asks on its own clock),
        so once the session has RTT samples only chunks sent a retransmission timeout ago are
        taken as lost; the rest may still reach the worker."""
        if now < self._pull_req_ok_at:
            self.endpoint.counters["drop_pull_req_rate"] += 1
            return
        interval = self.options.probe_interval
        self._pull_req_ok_at = now + interval
        horizon = self.rtt.timeout(interval) if self.rtt.samples else interval
        self._requeue_missing(now, force=True, sent_before=now - horizon)

    def _requeue_missing(self, now: float, layer: int | None = None, force: bool = False,
                         sent_before: float = INFINITY) -> None:
        """Queue again every chunk (of `layer`, or of all layers) not known to have arrived.
        Without `force`, while the first pass is not over and the budget covers what is
        missing, nothing is queued: the chunks still to come will meet the bound. After the
        pass, a receiver that is still open (it answered with BITMAPs, not STOP) is the
        authority: its bound is not met, whatever this sender assumes about it. Only chunks last
        sent before `sent_before` are queued."""
        lo, hi = 0, len(self.arrived)
        if layer is not None:
            lo = self._base[layer]
            hi = lo + self.plan.chunk_counts[layer]
        candidates = ~self.arrived[lo:hi] & ~self._queued[lo:hi] & (self._sent_at[lo:hi] < sent_before)
        if not force and self.window is not None:
            # Control packets ride the switches' highest-priority queue and overtake DATA that
            # waits in lower ones: a chunk sent less than a round trip before the probe may
            # still be queued behind it. It stays in flight until a later probe.
            candidates &= self.rtt.surely_arrived_by(self._sent_at[lo:hi]) <= self._probe_at
        missing = lo + np.flatnonzero(candidates)
        if len(missing):
            self._outstanding[missing] = False
            self._lost[missing] = True
            self._in_flight = None
            if self.window is not None:
                self.window.on_loss(self._known_lost(), now)
            if (not force and not self._sent_once.all()
                    and self.budget.covers(self._missing_per_layer())):
                return
            self._queued[missing] = True
            self._fast[missing] = False
            self._queue = self._queue[self._pos:] + missing.tolist()
            self._pos = 0
            self._next_probe = INFINITY

    def _detect_lost(self, now: float) -> None:
        """RACK: chunks in flight sent before the latest-sent chunk known delivered are lost
        once out longer than its round trip plus the reordering window; resend them now, unless
        the budget covers every chunk known lost (the receiver closes without them once the
        chunks in flight arrive; a later loss is judged again). Only a BITMAP (the open receiver's word) makes a covered loss be resent."""
        self._rack_wake = INFINITY
        if self._rack_sent == -INFINITY:
            return
        # (a chunk the reordering rule freed from the window is still a candidate)
        earlier = (self._sent_once & ~self.arrived & ~self._queued & ~self._lost
                   & (self._sent_at < self._rack_sent))
        if not earlier.any():
            return
        due = self._sent_at + self._rack_rtt + REORDER_WINDOW * self.rtt.srtt
        lost = earlier & (due <= now)
        waiting = earlier & ~lost
        if waiting.any():
            self._rack_wake = float(due[waiting].min())
        missing = np.flatnonzero(lost)
        if not len(missing):
            return
        self._outstanding[missing] = False
        self._lost[missing] = True
        self._in_flight = None
        if self.window is not None:
            self.window.on_loss(self._known_lost(), now)
        gone = self._lost & ~self.arrived & ~self._queued
        counts = [int(gone[b:b + c].sum()) for b, c in zip(self._base, self.plan.chunk_counts)]
        resend = []
        for idx in missing.tolist():
            if self.budget.covers(counts):
                break   # the rest may stay missing: the chunks in flight will meet the bound
            resend.append(idx)
            counts[int(np.searchsorted(self._base, idx, side="right")) - 1] -= 1
        if not resend:
            return
        missing = np.array(resend)
        self.fast_repairs += len(missing)
        self._queued[missing] = True
        self._fast[missing] = True
        self._queue = self._queue[self._pos:] + missing.tolist()
        self._pos = 0
        self._next_probe = INFINITY

    def _apply_ack(self, payload: bytes) -> tuple[int, int, int, float, int]:
        """Mark every chunk the ACK's entries name arrived and not outstanding: (newly arrived,
        of them CE-marked, of them sent Not-ECT, the latest send time of those sent once or
        -inf, the highest transmission number acknowledged). PacketError at the first entry
        naming no chunk (the ones before it stay applied). The native core does it in
        native/send_acks.cpp, the same way."""
        if self._ack_layout is not None:
            newly, marked, not_ect, latest_send, highest, applied, error = _native.apply_ack(
                payload, *self._ack_layout, self.arrived, self._outstanding, self._not_ect,
                self._resent, self._sent_at, self._tx)
            if applied:
                self._in_flight = None
            if error:
                raise PacketError("corrupt", "ACK payload is not whole entries" if error == 3
                                  else f"ACK entry {applied} names no chunk of the plan")
            return newly, marked, not_ect, latest_send, highest
        newly = marked = not_ect = 0
        highest = 0
        latest_send = -INFINITY      # of the newly acknowledged chunks sent once (Karn)
        for layer, seq, ce in wire.unpack_ack_marks(payload):
            idx = self._index(layer, seq)
            if not self.arrived[idx]:
                newly += 1
                marked += ce
                not_ect += int(self._not_ect[idx])
                if not self._resent[idx]:
                    latest_send = max(latest_send, float(self._sent_at[idx]))
            self.arrived[idx] = True
            self._outstanding[idx] = False
            self._in_flight = None
            highest = max(highest, int(self._tx[idx]))
        return newly, marked, not_ect, latest_send, highest

    def _on_ack(self, payload: bytes, hdr: wire.Header, now: float) -> None:
        newly, marked, not_ect, latest_send, highest = self._apply_ack(payload)
        if newly and latest_send > -INFINITY:
            self.rtt.sample(now - latest_send)
            if latest_send > self._rack_sent:
                self._rack_sent, self._rack_rtt = latest_send, now - latest_send
        if newly:
            self._detect_lost(now)
        if self.window is not None and newly:
            self.window.on_ack(newly, marked, hdr.tele_qdelay_us, hdr.tele_max_qdepth, not_ect, now)
            # Overtaken chunks stop holding the window. They are no loss signal: a lost ACK
            # looks the same; the receiver's BITMAP is what tells loss beyond the bound.
            self._outstanding &= ~(self._tx < highest - REORDER_THRESHOLD)
            self._in_flight = None
        if self._silence and newly and self._next_probe != INFINITY:
            self._next_probe = now + self._loss_timer()

    def on_packet(self, pkt: Received, now: float) -> None:
        hdr = pkt.header
        counters = self.endpoint.counters
        if hdr.worker_rank != self.peer_rank:
            counters["drop_foreign_rank"] += 1
            return
        if self.done:
            counters["late_control"] += 1
            return
        self.last_heard = now
        try:
            if hdr.kind == wire.KIND_ACK:
                self._on_ack(pkt.payload, hdr, now)
            elif hdr.kind == wire.KIND_BITMAP:
                first, count = self._bitmap_window(hdr, len(pkt.payload))
                bits = wire.unpack_bitmap(pkt.payload, count)
                base = self._base[hdr.layer_id] + first
                self.arrived[base:base + count] |= bits
                self._outstanding[base:base + count] &= ~bits
                self._in_flight = None
                # A probe is answered with one BITMAP per layer, in layer order: decide on
                # resends with all of them in (a lost last one waits for the next probe).
                if base + count == len(self.arrived):     # the last layer's last segment
                    self._requeue_missing(now)
            elif hdr.kind == wire.KIND_STOP:
                self.done = True
                self.stats.finished = now
                self.stats.closed_by = wire.STOP_REASON_NAMES.get(hdr.chunk_seq)
            elif hdr.kind == wire.KIND_PULL_REQ:
                self._on_pull_req(now)
            else:
                counters["drop_unexpected_kind"] += 1
        except PacketError as exc:
            counters[f"drop_{exc.reason}"] += 1

    def window_summary(self) -> dict:
        """The window at the end of the transfer and what cut it during this transfer (empty
        without a window)."""
        if self.window is None or self._window_start is None:
            return {}
        now, start = self.window.stats, self._window_start
        return {"cwnd": round(self.window.cwnd, 2), "cc_marked": now.marked - start.marked,
                "cc_mark_cuts": now.reductions - start.reductions,
                "cc_loss_cuts": now.loss_halvings - start.loss_halvings,
                "cc_idle_cuts": now.idle_restarts - start.idle_restarts,
                "cc_losses_spared": now.losses_spared - start.losses_spared,
                "srtt_ms": round(self.window.rtt.srtt * 1000, 3),
                "rto_ms": round(self.window.rtt.timeout(self.options.probe_interval) * 1000, 3)}

    def _bitmap_window(self, hdr: wire.Header, payload_bytes: int) -> tuple[int, int]:
        """The chunks of its layer a BITMAP covers, (first, count): from its chunk_seq, as many
        as its bits, to the layer's end at most (a layer too large for one datagram is answered
        in segments, in order: hosts/transport/probe_answer.py); PacketError if it covers none."""
        count = self.plan.chunk_counts[self._layer(hdr.layer_id)]
        if hdr.chunk_seq >= count:
            raise PacketError("corrupt", f"BITMAP from chunk {hdr.chunk_seq} of layer "
                                         f"{hdr.layer_id} of {count} chunks")
        if not payload_bytes:
            raise PacketError("truncated", f"empty BITMAP of layer {hdr.layer_id}")
        return hdr.chunk_seq, min(8 * payload_bytes, count - hdr.chunk_seq)

    def _layer(self, layer: int) -> int:
        if layer >= self.plan.num_layers:
            raise PacketError("corrupt", f"layer {layer} out of range")
        return layer

    def _index(self, layer: int, seq: int) -> int:
        if seq >= self.plan.chunk_counts[self._layer(layer)]:
            raise PacketError("corrupt", f"chunk {seq} of layer {layer} out of range")
        return self._base[layer] + seq


# How a send group shares its port among its peers (--pull-schedule): 'together', one DATA
# packet each in turn, so the transfers end together; 'serial', the lowest rank first as far as
# its window and the port let it, so the transfers end one after another.
SCHEDULES = ("together", "serial")


class SendGroup:
    """The senders of one round and stage to several peers (the PS's pull), routed by rank,
    sharing their port by `schedule` (SCHEDULES; `tick` says what each one does)."""

    def __init__(self, sessions: list[SendSession], schedule: str = "together") -> None:
        if not sessions:
            raise ValueError("a send group needs at least one session")
        if schedule not in SCHEDULES:
            raise ValueError(f"schedule {schedule!r} is not one of {SCHEDULES}")
        self.round = sessions[0].round
        self.pull = sessions[0].pull
        self.by_rank = {s.peer_rank: s for s in sessions}
        self.schedule = schedule
        self._served = -1     # the rank that sent the group's last DATA packet

    @property
    def done(self) -> bool:
        return all(s.done for s in self.by_rank.values())

    @property
    def active(self) -> bool:
        return not self.done

    def tick(self, now: float) -> float:
        """Tick every session; the earliest time one wants to be ticked again.

        'together': one DATA packet each in turn (up to each one's burst): the peers' transfers
        go out interleaved and end together, so the next round's pushes start together. Each
        tick begins with the peer after the one that sent last: when the port's budget
        (port_pacer.py) lets only a few packets out per tick, every peer still gets its turn.
        'serial': in rank order; a session that stopped at its burst (it has more to send now)
        holds back the ranks after it until the next tick, one that stopped at its window, the
        port or the end of its queue lets the next one send. The lowest rank's transfer goes
        first and ends first, and a later peer gets what the earlier ones leave of the port (a
        window that cannot fill it, a transfer waiting for its repairs). A worker whose pull
        ended pushes its next round while the PS still sends the later workers' pulls, the
        other way along its link."""
        ranks = sorted(r for r, s in self.by_rank.items() if s.active)
        if self.schedule == "serial":
            wake = INFINITY
            for rank in ranks:
                wake = min(wake, self.by_rank[rank].tick(now))
                if wake <= now:
                    break
            return wake
        first = next((i for i, r in enumerate(ranks) if r > self._served), 0)
        active = [self.by_rank[r] for r in ranks[first:] + ranks[:first]]
        wake = {id(s): INFINITY for s in active}
        for _ in range(max((s.options.burst for s in active), default=0)):
            before = sum(s.stats.data_packets for s in active)
            for s in active:
                sent = s.stats.data_packets
                wake[id(s)] = s.tick(now, burst=1)
                if s.stats.data_packets > sent:
                    self._served = s.peer_rank
            if sum(s.stats.data_packets for s in active) == before:
                break
        return min(wake.values(), default=INFINITY)

    def on_packet(self, pkt: Received, now: float) -> None:
        session = self.by_rank.get(pkt.header.worker_rank)
        if session is None:
            session = next(iter(self.by_rank.values()))
        session.on_packet(pkt, now)
