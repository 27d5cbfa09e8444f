"""Receiving side of one round: reassembly per sender, out-of-order ACKs, LTP-style early close."""
from __future__ import annotations

from dataclasses import dataclass, field

from hosts import wire
from hosts.errors import PacketError, PeerTimeout
from hosts.transport.chunking import ChunkPlan
from hosts.transport.deadline import RoundTelemetry
from hosts.transport.port import Port, Received
from hosts.transport.probe_answer import ProbeAnswers, answer_rate, valid_padding
from hosts.transport.reassembly import TensorBuffer

INFINITY = float("inf")


@dataclass(frozen=True)
class ReceiveOptions:
    """deadline: seconds after a sender's first DATA at which its transfer closes regardless.
    absent_timeout: seconds an expected sender may stay silent before PeerTimeout.
    ack_every / ack_delay: an ACK goes out after this many chunks or this many seconds, or at
    once on a DATA flagged ACK_NOW (its sender waits for that ACK to send more).
    probe_interval: the job's --probe-ms in seconds; each sender's PROBEs are answered at up to
    ANSWERS_PER_PROBE_INTERVAL per interval (probe_answer.answer_rate)."""

    deadline: float = 0.5
    absent_timeout: float = 10.0
    ack_every: int = 16
    ack_delay: float = 0.002
    scope: str = "layer"   # bounds per layer, or pooled over the tensor (bounds.SCOPES)
    probe_interval: float = 0.02


@dataclass
class SenderState:
    buffer: TensorBuffer
    addr: tuple[str, int] | None = None
    first_data: float | None = None
    closed_by: str | None = None
    closed_at: float | None = None
    last_heard: float | None = None
    flags_seen: int = 0
    duplicates: int = 0
    pending_acks: list[tuple[int, int]] = field(default_factory=list)
    pending_marks: list[bool] = field(default_factory=list)   # CE seen, per pending ACK entry
    pending_qdelay_us: int = 0    # largest path queueing delay among the pending entries
    pending_qdepth: int = 0
    # the entries of the last ACK, repeated in the next one: a single lost ACK then costs the
    # sender no resend of chunks that arrived (it repairs on the ACKs' evidence)
    repeat_acks: list[tuple[int, int]] = field(default_factory=list)
    repeat_marks: list[bool] = field(default_factory=list)
    last_ack: float = 0.0
    last_stop: float = -INFINITY
    probe_answers: ProbeAnswers = field(default_factory=ProbeAnswers)


class RecvSession:
    """Collects one round (push or pull) from a set of expected senders.

    Each chunk is placed at its offset and acknowledged out of order (each ACK repeats the
    previous ACK's entries, so one lost ACK hides no arrival); each ACK entry echoes
    whether its DATA arrived CE-marked, and the ACK's telemetry fields the largest queueing
    delay and depth the switches stamped into the DATA it acknowledges (the sender's congestion
    signals). A sender's transfer closes (STOP) once its bound is met (per layer or over the
    tensor, `options.scope`): "complete" if nothing is missing then, else "bound"; or
    `deadline` s after its first DATA ("deadline"). The STOP names the reason (wire.STOP_*).
    The session is done when every expected sender is closed. Later DATA or PROBE from a
    closed sender is answered with STOP again, so a lost STOP costs one probe.
    """

    def __init__(self, endpoint: Port, plan: ChunkPlan, round_: int, *, pull: bool,
                 senders: list[int], required: tuple[float, ...], options: ReceiveOptions,
                 sender_names: dict[int, str] | None = None) -> None:
        self._set_round(endpoint, plan, round_, pull, required, options, sender_names)
        rate = answer_rate(options.probe_interval)
        self.senders = {rank: SenderState(TensorBuffer(plan), probe_answers=ProbeAnswers(rate))
                        for rank in senders}
        self.finished: float | None = None
        self.telemetry = RoundTelemetry()   # what the switches stamped into this round's DATA

    def _set_round(self, endpoint: Port, plan: ChunkPlan, round_: int, pull: bool,
                   required: tuple[float, ...], options: ReceiveOptions,
                   sender_names: dict[int, str] | None) -> None:
        """The fields every receive session has, whichever core keeps its senders."""
        if len(required) != plan.num_layers:
            raise ValueError("one required fraction per layer")
        self.endpoint = endpoint
        self.plan = plan
        self.round = round_
        self.pull = pull
        self.required = tuple(required)
        self.options = options
        self.flags = wire.FLAG_PULL if pull else 0
        self.names = sender_names or {}
        self.opened = endpoint.clock()

    @property
    def max_qdepth(self) -> int | None:
        """The deepest switch queue this round's DATA met; None when no packet carried telemetry
        (PLAIN traffic, or a network without gradlane switches)."""
        return self.telemetry.max_qdepth if self.telemetry.max_hops else None

    @property
    def done(self) -> bool:
        return all(s.closed_by is not None for s in self.senders.values())

    @property
    def active(self) -> bool:
        return not self.done

    def _name(self, rank: int) -> str:
        return self.names.get(rank, f"sender rank {rank}")

    def on_packet(self, pkt: Received, now: float) -> None:
        hdr = pkt.header
        counters = self.endpoint.counters
        state = self.senders.get(hdr.worker_rank)
        if state is None:
            counters["drop_foreign_rank"] += 1
            return
        # Every field is checked before the packet changes anything (its sender's address
        # included): a malformed packet must not redirect ACK/STOP away from the real sender.
        if hdr.kind == wire.KIND_DATA:
            self._on_data(state, pkt, now)
        elif hdr.kind == wire.KIND_PROBE:
            if not valid_padding(pkt.payload):
                counters["drop_corrupt"] += 1
                return
            self._heard(state, pkt, now)
            # Answered at a bounded rate and size (hosts/transport/probe_answer.py): a PROBE
            # with a spoofed source must not make us flood the address it names.
            if not state.probe_answers.allow(now):
                counters["drop_probe_rate"] += 1
                return
            if state.closed_by is not None:
                self._send_stop(state, now, force=True)
            else:
                self._flush_acks(state, now)
                for layer, first, n in state.probe_answers.segments(
                        self.plan, wire.HEADER_LEN + len(pkt.payload)):
                    bits = state.buffer.chunks[layer][first:first + n]
                    self.endpoint.send_control(wire.KIND_BITMAP, state.addr, self.round,
                                               self.flags, layer, wire.pack_bitmap(bits),
                                               chunk_seq=first)
        else:
            counters["drop_unexpected_kind"] += 1

    @staticmethod
    def _heard(state: SenderState, pkt: Received, now: float) -> None:
        """A valid packet from the sender: where to answer, and when we last heard it."""
        state.addr = pkt.addr
        state.last_heard = now

    def _on_data(self, state: SenderState, pkt: Received, now: float) -> None:
        counters = self.endpoint.counters
        hdr = pkt.header
        try:
            placed = state.buffer.place(hdr.layer_id, hdr.chunk_seq, hdr.elem_offset, pkt.payload)
        except PacketError as exc:
            counters[f"drop_{exc.reason}"] += 1
            return
        self._heard(state, pkt, now)
        self.telemetry.add(hdr.tele_max_qdepth, hdr.tele_qdelay_us, hdr.tele_hops)
        if state.closed_by is not None:
            # In flight when we closed: still useful until the owner consumes the buffer.
            counters["late_data"] += 1
            self._send_stop(state, now)
            return
        if state.first_data is None:
            state.first_data = now
        state.flags_seen |= hdr.flags
        if hdr.flags & wire.FLAG_RETX:
            counters["retx_received"] += 1
        if not placed:
            counters["drop_duplicate"] += 1
            state.duplicates += 1
        state.pending_acks.append((hdr.layer_id, hdr.chunk_seq))
        state.pending_marks.append(pkt.tos & 3 == wire.ECN_CE)
        state.pending_qdelay_us = max(state.pending_qdelay_us, hdr.tele_qdelay_us)
        state.pending_qdepth = max(state.pending_qdepth, hdr.tele_max_qdepth)
        if state.buffer.meets(self.required, self.options.scope):
            self._close(state, "complete" if state.buffer.complete() else "bound", now)
        elif len(state.pending_acks) >= self.options.ack_every or hdr.flags & wire.FLAG_ACK_NOW:
            self._flush_acks(state, now)

    def _flush_acks(self, state: SenderState, now: float) -> None:
        if state.pending_acks and state.addr is not None:
            entries = state.pending_acks + state.repeat_acks
            marks = state.pending_marks + state.repeat_marks
            self.endpoint.send_control(
                wire.KIND_ACK, state.addr, self.round, self.flags,
                payload=wire.pack_ack_entries(entries, marks),
                tele_qdepth=state.pending_qdepth, tele_qdelay_us=state.pending_qdelay_us)
            state.repeat_acks = list(state.pending_acks)
            state.repeat_marks = list(state.pending_marks)
        self._clear_acks(state)
        state.last_ack = now

    @staticmethod
    def _clear_acks(state: SenderState) -> None:
        state.pending_acks.clear()
        state.pending_marks.clear()
        state.pending_qdelay_us = state.pending_qdepth = 0

    def _send_stop(self, state: SenderState, now: float, force: bool = False) -> None:
        # Late DATA in flight would each trigger a STOP; one per millisecond is plenty.
        if state.addr is None or (not force and now - state.last_stop < 0.001):
            return
        self.endpoint.send_control(wire.KIND_STOP, state.addr, self.round, self.flags,
                                   chunk_seq=wire.STOP_REASONS.get(state.closed_by or "", 0))
        state.last_stop = now

    def _close(self, state: SenderState, why: str, now: float) -> None:
        state.closed_by = why
        state.closed_at = now
        self._clear_acks(state)
        self._send_stop(state, now, force=True)
        if self.done:
            self.finished = now

    def tick(self, now: float) -> float:
        """Close senders whose deadline passed, flush ACKs; the next time to call."""
        wake = INFINITY
        for rank, state in self.senders.items():
            if state.closed_by is not None:
                continue
            # silence counts mid-transfer too: a transfer with no deadline (a reliable pull)
            # would otherwise wait for a dead sender forever
            silent_until = max(self.opened, state.last_heard or 0.0) + self.options.absent_timeout
            if now > silent_until:
                raise PeerTimeout(f"{self._name(rank)} sent nothing for "
                                  f"{self.options.absent_timeout:.1f} s in round {self.round} "
                                  f"(dead or unreachable)")
            if state.first_data is None:
                continue
            closes_at = state.first_data + self.options.deadline
            if now >= closes_at:
                self._close(state, "deadline", now)
                continue
            wake = min(wake, closes_at)
            if state.pending_acks:
                # the same sum as the wake time returned: a driver on simulated time calls
                # back at exactly that time, where `now - last_ack` may round below ack_delay
                flush_at = state.last_ack + self.options.ack_delay
                if now >= flush_at:
                    self._flush_acks(state, now)
                else:
                    wake = min(wake, flush_at)
        return wake

    def silent(self, now: float) -> list[int]:
        """Ranks of open transfers silent past ``absent_timeout`` (what ``tick`` raises for)."""
        limit = self.options.absent_timeout
        return [rank for rank, st in self.senders.items() if st.closed_by is None
                and now - max(self.opened, st.last_heard or 0.0) > limit]

    def close_sender(self, rank: int, why: str) -> None:
        """Close ``rank``'s transfer from outside (the PS found it absent, or it joined again)."""
        state = self.senders.get(rank)
        if state is not None and state.closed_by is None:
            self._close(state, why, self.endpoint.clock())

    def fractions(self) -> dict[int, list[float]]:
        """Per sender, the delivered fraction of every layer."""
        return {rank: s.buffer.fractions() for rank, s in self.senders.items()}

    def closed_by(self) -> dict[int, str | None]:
        return {rank: s.closed_by for rank, s in self.senders.items()}
