"""Sending side of one tensor transfer: paced out-of-order DATA, probe, resend only the missing."""
from __future__ import annotations

import random
import time
from dataclasses import dataclass

import numpy as np

from hosts import wire
from hosts.errors import PacketError, PeerTimeout
from hosts.transport.chunking import Chunk, ChunkPlan
from hosts.transport.endpoint import Endpoint, Received
from hosts.transport.probe_answer import probe_padding

INFINITY = float("inf")


@dataclass(frozen=True)
class SendOptions:
    """Pacing, probing and marking of a sender.

    pace_pps: DATA packets per second (0 = as fast as the socket takes them, `burst` at a time).
    priority_hints: set DROPPABLE, magnitude-class DSCP and ECN per chunk (off = no switch help).
    plain: every packet carries FLAG_PLAIN and TOS 0: switches treat it as ordinary traffic
        (the software-MLT baseline; implies no priority hints).
    droppable_below: chunks of a magnitude class below this are drop-eligible (push stage only;
        never chunks of a critical layer, whose bound is 0).
    droppable: per layer the drop-eligible magnitude classes (the controller's policy); when
        set it replaces `droppable_below`.
    order: 'layer' (layer 0 first) or 'shuffle' (random order, seeded).
    policy_epoch: stamped on every DATA packet (the job policy generation followed; 0 = none).
    probe_on_silence: probe only after `probe_interval` without new ACKs (while the receiver's
        ACKs keep coming, a queue is still draining and nothing is known lost); off = the first
        probe right after the first pass, then one every `probe_interval`.
    window: initial congestion window in DATA packets (0 = no window: everything goes out at
        once). With a window, at most that many packets are unacknowledged; each newly ACKed
        packet adds one (slow start) or 1/window (above the threshold); a probe's BITMAP that
        shows losses halves it (Reno's rule, in packets). Implies probe_on_silence.
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
    order: str = "layer"
    seed: int = 0
    policy_epoch: int = 0
    probe_on_silence: bool = False
    window: int = 0


@dataclass
class SendStats:
    data_packets: int = 0
    retransmissions: int = 0
    probes: int = 0
    bytes_sent: int = 0
    started: float = 0.0
    finished: float = 0.0

    @property
    def seconds(self) -> float:
        return max(self.finished - self.started, 0.0)


class SendSession:
    """Sends one round's tensor set to one peer until the peer says STOP.

    DATA goes out in plan order (or shuffled), paced; ACK and BITMAP mark chunks as arrived;
    once everything was sent once the sender PROBEs, and each BITMAP queues only the missing
    chunks again (flag RETX). PeerTimeout if the peer says nothing for `peer_timeout` s.
    """

    def __init__(self, endpoint: Endpoint, peer: tuple[str, int], peer_rank: int,
                 plan: ChunkPlan, layers: list[np.ndarray], round_: int, *, pull: bool,
                 options: SendOptions, extra_flags: int = 0, peer_name: str = "peer",
                 critical_layers: frozenset[int] = frozenset()) -> None:
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
        chunks = plan.split(layers)
        self._base = np.cumsum([0] + plan.chunk_counts[:-1]).tolist()
        self._chunks = chunks
        self._payloads = [c.values.astype(">f4").tobytes() for c in chunks]
        self._marks = [self._marking(c) for c in chunks]
        self.arrived = np.zeros(len(chunks), dtype=bool)
        self._queued = np.ones(len(chunks), dtype=bool)
        self._queue = list(range(len(chunks)))
        if options.order == "shuffle":
            random.Random(options.seed * 1000003 + round_).shuffle(self._queue)
        self._pos = 0
        self._sent_once = np.zeros(len(chunks), dtype=bool)
        now = time.monotonic()
        self.stats = SendStats(started=now)
        self._next_send = now
        self._next_probe = INFINITY
        self.last_heard = now
        self.done = False
        self._silence = options.probe_on_silence or options.window > 0
        self._cwnd = float(options.window)
        self._ssthresh = INFINITY
        self._outstanding = np.zeros(len(chunks), dtype=bool)   # sent, neither ACKed nor known lost
        self._loss_seen_at = -INFINITY
        self._probe_padding = bytes(probe_padding(plan))   # pays for the answer's BITMAPs

    @property
    def active(self) -> bool:
        return not self.done

    def _marking(self, chunk: Chunk) -> tuple[int, int]:
        """(flags, TOS) of a chunk's DATA packets. A chunk of a bound-0 layer always carries
        CRITICAL (LTP: must be delivered); with PLAIN the switches ignore it all the same."""
        critical = chunk.layer in self.critical_layers
        if self.options.plain or not self.options.priority_hints:
            return self.stage_flags | (wire.FLAG_CRITICAL if critical else 0), 0
        if critical:
            return self.stage_flags | wire.FLAG_CRITICAL, wire.data_tos(chunk.mag_class, False)
        eligible = self.options.droppable
        droppable = not self.pull and (chunk.mag_class < self.options.droppable_below
                                       if eligible is None else chunk.mag_class in eligible[chunk.layer])
        flags = self.stage_flags | (wire.FLAG_DROPPABLE if droppable else 0)
        return flags, wire.data_tos(chunk.mag_class, droppable)

    def _send_chunk(self, idx: int) -> None:
        chunk = self._chunks[idx]
        flags, tos = self._marks[idx]
        retx = self._sent_once[idx]
        if retx:
            flags |= wire.FLAG_RETX
            self.stats.retransmissions += 1
            self.endpoint.counters["retransmissions"] += 1
        payload = self._payloads[idx]
        hdr = wire.pack_header(wire.KIND_DATA, flags, self.endpoint.job_id, self.endpoint.rank,
                               chunk.layer, self.round, chunk.mag_class, len(payload),
                               chunk.seq, chunk.offset, policy_epoch=self.options.policy_epoch)
        self.endpoint.send(hdr + payload, self.peer, tos)
        self._sent_once[idx] = True
        self._outstanding[idx] = True
        self.stats.data_packets += 1
        self.endpoint.counters["data_packets_sent"] += 1
        self.stats.bytes_sent += len(hdr) + len(payload)

    def tick(self, now: float) -> float:
        """Send what pacing allows, probe when everything went out; the next time to call."""
        if self.done:
            return INFINITY
        if now - self.last_heard > self.options.peer_timeout:
            raise PeerTimeout(f"{self.peer_name} at {self.peer[0]}:{self.peer[1]} did not answer "
                              f"for {self.options.peer_timeout:.1f} s in round {self.round} "
                              f"(dead or unreachable)")
        pps = self.options.pace_pps
        sent = 0
        while self._pos < len(self._queue):
            if pps > 0 and self._next_send > now:
                return self._next_send
            if sent >= self.options.burst:
                return now
            if self._cwnd and int(self._outstanding.sum()) >= int(self._cwnd):
                # Window full: wait for ACKs; a probe after silence finds what was lost.
                if self._next_probe == INFINITY:
                    self._next_probe = now + self.options.probe_interval
                break
            idx = self._queue[self._pos]
            self._pos += 1
            self._queued[idx] = False
            if self.arrived[idx]:
                continue
            self._send_chunk(idx)
            sent += 1
            if pps > 0:
                self._next_send = max(self._next_send, now - 1.0 / pps) + 1.0 / pps
            if self._pos == len(self._queue):
                self._next_probe = now + self._probe_delay()
        if self._next_probe == INFINITY:
            self._next_probe = now + self._probe_delay()
        if now >= self._next_probe:
            self.endpoint.send_control(wire.KIND_PROBE, self.peer, self.round, self.stage_flags,
                                       payload=self._probe_padding)
            self.stats.probes += 1
            self._next_probe = now + self.options.probe_interval
        return self._next_probe

    def _probe_delay(self) -> float:
        # First probe right after the first pass; after a resend, wait a full interval so a
        # persistently lossy path is not hammered.
        if self._silence:
            return self.options.probe_interval
        return self.options.first_probe_delay if self.stats.probes == 0 else self.options.probe_interval

    def _requeue_missing(self, now: float, layer: int | None = None) -> None:
        """Queue again every chunk (of `layer`, or of all layers) not known to have arrived."""
        lo, hi = 0, len(self.arrived)
        if layer is not None:
            lo = self._base[layer]
            hi = lo + self.plan.chunk_counts[layer]
        missing = lo + np.flatnonzero(~self.arrived[lo:hi] & ~self._queued[lo:hi])
        if len(missing):
            if self._cwnd and self._outstanding[missing].any() and now - self._loss_seen_at > self.options.probe_interval:
                # One loss event per probe: halve the window (not below 2 packets).
                self._ssthresh = max(self._cwnd / 2, 2.0)
                self._cwnd = self._ssthresh
                self._loss_seen_at = now
            self._outstanding[missing] = False
            self._queued[missing] = True
            self._queue = self._queue[self._pos:] + missing.tolist()
            self._pos = 0
            self._next_probe = INFINITY

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
                newly = 0
                for layer, seq in wire.unpack_ack_entries(pkt.payload):
                    idx = self._index(layer, seq)
                    newly += not self.arrived[idx]
                    self.arrived[idx] = True
                    self._outstanding[idx] = False
                if self._cwnd and newly:
                    for _ in range(newly):
                        self._cwnd += 1.0 if self._cwnd < self._ssthresh else 1.0 / self._cwnd
                if self._silence and newly and self._next_probe != INFINITY:
                    self._next_probe = now + self.options.probe_interval
            elif hdr.kind == wire.KIND_BITMAP:
                count = self.plan.chunk_counts[self._layer(hdr.layer_id)]
                bits = wire.unpack_bitmap(pkt.payload, count)
                base = self._base[hdr.layer_id]
                self.arrived[base:base + count] |= bits
                self._outstanding[base:base + count] &= ~bits
                self._requeue_missing(now, hdr.layer_id)
            elif hdr.kind == wire.KIND_STOP:
                self.done = True
                self.stats.finished = now
            elif hdr.kind == wire.KIND_PULL_REQ:
                self._requeue_missing(now)
            else:
                counters["drop_unexpected_kind"] += 1
        except PacketError as exc:
            counters[f"drop_{exc.reason}"] += 1

    def _layer(self, layer: int) -> int:
        if layer >= self.plan.num_layers:
            raise PacketError("corrupt", f"layer {layer} out of range")
        return layer

    def _index(self, layer: int, seq: int) -> int:
        if seq >= self.plan.chunk_counts[self._layer(layer)]:
            raise PacketError("corrupt", f"chunk {seq} of layer {layer} out of range")
        return self._base[layer] + seq


class SendGroup:
    """The senders of one round and stage to several peers (the PS's pull), routed by rank."""

    def __init__(self, sessions: list[SendSession]) -> None:
        if not sessions:
            raise ValueError("a send group needs at least one session")
        self.round = sessions[0].round
        self.pull = sessions[0].pull
        self.by_rank = {s.peer_rank: s for s in sessions}

    @property
    def done(self) -> bool:
        return all(s.done for s in self.by_rank.values())

    @property
    def active(self) -> bool:
        return not self.done

    def tick(self, now: float) -> float:
        return min((s.tick(now) for s in self.by_rank.values() if s.active), default=INFINITY)

    def on_packet(self, pkt: Received, now: float) -> None:
        session = self.by_rank.get(pkt.header.worker_rank)
        if session is None:
            session = next(iter(self.by_rank.values()))
        session.on_packet(pkt, now)
