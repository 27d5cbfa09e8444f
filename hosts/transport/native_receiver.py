"""RecvSession on the native core: the same interface and the same frames, the per-datagram
work (reassembly, ACK bookkeeping, early close, telemetry, timers) in C++ (native/recv_core.h).

Each sender's arrays (values, delivered, chunks) are numpy arrays this module allocates and
the core writes DATA chunks into in place; `senders[rank]` is a live view of the core's state
with the fields of `receiver.SenderState` that drivers read. PROBE answers (rare) stay in
Python, over the core's state. Frames go out through the session's Port, framed by the same
`send_control` as the Python core's, so both send the same bytes.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from hosts import wire
from hosts.errors import PeerTimeout
from hosts.transport._native import RecvCore
from hosts.transport.chunking import ChunkPlan
from hosts.transport.deadline import RoundTelemetry
from hosts.transport.port import Port, Received
from hosts.transport.probe_answer import ProbeAnswers, answer_rate, valid_padding
from hosts.transport.reassembly import TensorBuffer
from hosts.transport.receiver import ReceiveOptions, RecvSession

# event bits of RecvCore.on_packet (native/recv_core.h Event; EV_NOT_DATA in module.cpp)
_EV_SEND = 64
_EV_NOT_DATA = 128
EVENT_COUNTERS = ((1, "drop_foreign_rank"), (2, "drop_corrupt"), (4, "drop_nonfinite"),
                (8, "late_data"), (16, "retx_received"), (32, "drop_duplicate"))
_OTHER = 4      # closed for a reason given from outside (close_sender), STOP reason 0
_REASONS = {code: name for name, code in wire.STOP_REASONS.items()}


class SharedBuffer(TensorBuffer):
    """A sender's TensorBuffer whose arrays the native core fills (it never `place`s itself).

    Nothing here refers back to the session (no reference cycle): a session and its arrays are
    freed as soon as the driver drops it, as the Python core's are."""

    def __init__(self, plan: ChunkPlan) -> None:
        self.plan = plan
        self.values = [np.zeros(n, dtype=np.float32) for n in plan.layer_sizes]
        self.delivered = [np.zeros(n, dtype=bool) for n in plan.layer_sizes]
        self.chunks = [np.zeros(c, dtype=bool) for c in plan.chunk_counts]
        self._core: RecvCore | None = None
        self._index = -1

    @property
    def delivered_elems(self) -> list[int]:   # type: ignore[override]
        assert self._core is not None
        return self._core.state(self._index)[6]

    def place(self, layer: int, seq: int, offset: int, payload: bytes | memoryview) -> bool:
        raise TypeError("the native core places this buffer's chunks")


class SenderView:
    """One sender's state in the native core, read-only, with SenderState's field names."""

    def __init__(self, core: RecvCore, index: int, buffer: SharedBuffer,
                 why: dict[int, str], answer_rate: float) -> None:
        self._core = core
        self._index = index
        self._why = why
        self.buffer = buffer
        self.probe_answers = ProbeAnswers(answer_rate)

    def _state(self) -> tuple:
        return self._core.state(self._index)

    @property
    def closed_by(self) -> str | None:
        code = self._state()[0]
        if code == 0:
            return None
        return self._why.get(self._index) if code == _OTHER else _REASONS[code]

    @property
    def first_data(self) -> float | None:
        return self._state()[1]

    @property
    def closed_at(self) -> float | None:
        return self._state()[2]

    @property
    def last_heard(self) -> float | None:
        return self._state()[3]

    @property
    def flags_seen(self) -> int:
        return self._state()[4]

    @property
    def duplicates(self) -> int:
        return self._state()[5]

    @property
    def addr(self) -> tuple[str, int] | None:
        return self._state()[7]


class NativeRecvSession(RecvSession):
    """`RecvSession` (same arguments, properties and frames) on the native core."""

    def __init__(self, endpoint: Port, plan: ChunkPlan, round_: int, *, pull: bool,
                 senders: list[int], required: tuple[float, ...], options: ReceiveOptions,
                 sender_names: dict[int, str] | None = None) -> None:
        self._set_round(endpoint, plan, round_, pull, required, options, sender_names)
        ranks = list(dict.fromkeys(senders))
        buffers = [SharedBuffer(plan) for _ in ranks]
        self._core = RecvCore(
            plan.layer_sizes, plan.layer_chunk_elems, [float(r) for r in self.required], ranks,
            [list(zip(b.values, b.delivered, b.chunks)) for b in buffers], float(self.opened),
            float(options.deadline), float(options.absent_timeout), int(options.ack_every),
            float(options.ack_delay), options.scope != "layer")
        self._ranks = ranks
        self._why: dict[int, str] = {}
        self.senders = {}
        for k, (rank, buf) in enumerate(zip(ranks, buffers)):
            buf._core, buf._index = self._core, k
            self.senders[rank] = SenderView(self._core, k, buf, self._why,
                                            answer_rate(self.options.probe_interval))

    @property
    def native_route(self) -> tuple[RecvCore, Callable[[tuple | None], None]]:
        """The core DATA can be handed to straight from the socket, and how the frames it
        asks for are sent (hosts/transport/data_route.py)."""
        return self._core, self._send

    @property
    def finished(self) -> float | None:   # type: ignore[override]
        return self._core.finished

    @property
    def telemetry(self) -> RoundTelemetry:   # type: ignore[override]
        packets, qdepth, qdelay, hops = self._core.telemetry()
        return RoundTelemetry(packets, qdepth, qdelay, hops)

    @property
    def done(self) -> bool:
        return self._core.done

    @property
    def active(self) -> bool:
        return not self._core.done

    def on_packet(self, pkt: Received, now: float) -> None:
        ev = self._core.on_packet(pkt, now)
        if not ev:
            return
        if ev & _EV_NOT_DATA:
            self._on_control(pkt, now)
            return
        counters = self.endpoint.counters
        for bit, name in EVENT_COUNTERS:
            if ev & bit:
                counters[name] += 1
        if ev & _EV_SEND:
            self._send(self._core.take_send())

    def _on_control(self, pkt: Received, now: float) -> None:
        """A packet other than DATA from an expected sender: PROBE, or an unexpected kind."""
        counters = self.endpoint.counters
        if pkt.header.kind != wire.KIND_PROBE:
            counters["drop_unexpected_kind"] += 1
            return
        if not valid_padding(pkt.payload):
            counters["drop_corrupt"] += 1
            return
        k = self._core.index(pkt.header.worker_rank)
        self._core.heard(k, pkt.addr, now)
        view = self.senders[self._ranks[k]]
        if not view.probe_answers.allow(now):
            counters["drop_probe_rate"] += 1
            return
        if self._core.state(k)[0]:
            self._send(self._core.stop(k, now, True))
            return
        self._send(self._core.flush(k, now))
        for layer, first, n in view.probe_answers.segments(self.plan,
                                                           wire.HEADER_LEN + len(pkt.payload)):
            bits = view.buffer.chunks[layer][first:first + n]
            self.endpoint.send_control(wire.KIND_BITMAP, pkt.addr, self.round, self.flags, layer,
                                       wire.pack_bitmap(bits), chunk_seq=first)

    def _send(self, frame: tuple | None) -> None:
        """Frame one ACK or STOP the core asked for, through the port."""
        if frame is None:
            return
        kind, addr, payload, qdepth, qdelay_us, reason = frame
        if kind == wire.KIND_ACK:
            self.endpoint.send_control(wire.KIND_ACK, addr, self.round, self.flags,
                                       payload=payload, tele_qdepth=qdepth,
                                       tele_qdelay_us=qdelay_us)
        else:
            self.endpoint.send_control(wire.KIND_STOP, addr, self.round, self.flags,
                                       chunk_seq=reason)

    def tick(self, now: float) -> float:
        """Close senders whose deadline passed, flush ACKs; the next time to call."""
        wake, frames, silent = self._core.tick(now)
        for frame in frames:
            self._send(frame)
        if silent >= 0:
            raise PeerTimeout(f"{self._name(self._ranks[silent])} sent nothing for "
                              f"{self.options.absent_timeout:.1f} s in round {self.round} "
                              f"(dead or unreachable)")
        return wake

    def close_sender(self, rank: int, why: str) -> None:
        """Close ``rank``'s transfer from outside (the PS found it absent, or it joined again)."""
        k = self._core.index(rank)
        if k < 0 or self._core.state(k)[0]:
            return
        code = wire.STOP_REASONS.get(why, _OTHER)
        if code == _OTHER:
            self._why[k] = why
        self._send(self._core.close(k, code, self.endpoint.clock()))
