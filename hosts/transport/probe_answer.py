"""How much a receiver may answer to PROBEs: a bounded rate per sender, and never more bytes
than the PROBE carried times ANSWER_FACTOR.

A PROBE's answer is one BITMAP per layer segment: a layer of at most SEGMENT_CHUNKS chunks is
one segment (its whole bitmap at chunk_seq 0), a larger one several, each at its first chunk
(chunk_seq), so that every BITMAP fits one datagram, a --packet-mac trailer included. The
answer is often more bytes than a header-only PROBE. So a sender pads its PROBE with zeros
(`probe_padding`) until the whole answer fits the budget (or one datagram's worth); an unpadded
or spoofed PROBE gets only as many BITMAPs as its own size pays for (the next PROBE gets the
next segments), and PROBEs beyond the rate get nothing.
"""
from __future__ import annotations

import math

from hosts import wire
from hosts.transport.chunking import ChunkPlan
from hosts.transport.packet_mac import TAG_BYTES

ANSWER_FACTOR = 2
# Answers per probe interval of the job (--probe-ms, which every agent of a job shares): a
# sender probes at most once an interval per session, so this leaves room for PULL_REQs and
# reordering while a flood of spoofed PROBEs gets no more. 200 a second at the default 20 ms.
ANSWERS_PER_PROBE_INTERVAL = 4.0
ANSWERS_PER_SECOND = ANSWERS_PER_PROBE_INTERVAL / 0.02
ANSWER_BURST = 8.0


# Chunks one BITMAP covers at most: its payload fills a datagram with room for a MAC trailer
# (a multiple of 8, so every segment but a layer's last fills whole bytes).
SEGMENT_CHUNKS = 8 * (wire.MAX_DATA_PAYLOAD - TAG_BYTES)


def bitmap_bytes(chunks: int) -> int:
    """Datagram bytes of one BITMAP covering `chunks` chunks (one segment)."""
    return wire.HEADER_LEN + (chunks + 7) // 8


def segments(chunks: int) -> list[tuple[int, int]]:
    """A layer of `chunks` chunks as BITMAP segments: (first chunk, chunks), in order."""
    return [(first, min(SEGMENT_CHUNKS, chunks - first))
            for first in range(0, chunks, SEGMENT_CHUNKS)]


def probe_padding(plan: ChunkPlan) -> int:
    """Zero bytes a PROBE carries so that the BITMAPs of every layer fit its answer budget
    (at most a full datagram, with room for a --packet-mac trailer: larger answers take several
    PROBEs)."""
    answer = sum(bitmap_bytes(n) for c in plan.chunk_counts for _, n in segments(c))
    return min(max(math.ceil(answer / ANSWER_FACTOR) - wire.HEADER_LEN, 0),
               wire.MAX_DATA_PAYLOAD - TAG_BYTES)


def valid_padding(payload: bytes) -> bool:
    """A PROBE's payload is zeros only, at most one datagram's worth."""
    return len(payload) <= wire.MAX_DATA_PAYLOAD and not payload.strip(b"\0")


def answer_rate(probe_interval: float) -> float:
    """Answers a second one sender gets when the job probes every `probe_interval` seconds.
    A fixed rate fits one timescale only: at datacenter timers (ns-3's 10 Gb/s runs probe
    every quarter millisecond) 200 a second left a sender whose window was full without an
    answer for 5 ms at a time, twenty of its probes in a row."""
    return ANSWERS_PER_PROBE_INTERVAL / probe_interval


class ProbeAnswers:
    """One sender's PROBE answers: a token bucket (`rate` a second, a burst of ANSWER_BURST)
    and which segment comes next."""

    def __init__(self, rate: float = ANSWERS_PER_SECOND) -> None:
        self.rate = rate
        self._tokens = ANSWER_BURST
        self._at: float | None = None
        self._next = (0, 0)       # (layer, index of its segment)

    def allow(self, now: float) -> bool:
        """Whether a PROBE arriving at `now` may be answered at all (takes a token)."""
        if self._at is not None:
            self._tokens = min(ANSWER_BURST, self._tokens + (now - self._at) * self.rate)
        self._at = now
        if self._tokens < 1.0:
            return False
        self._tokens -= 1.0
        return True

    def segments(self, plan: ChunkPlan, probe_bytes: int) -> list[tuple[int, int, int]]:
        """The segments (layer, first chunk, chunks) whose BITMAPs fit the budget of a PROBE of
        `probe_bytes` (datagram), in turn from where the last answer stopped, each layer's in
        order; at most one round of all layers, at least one segment if even that one fits."""
        budget = ANSWER_FACTOR * probe_bytes
        order = [(layer, k, seg) for layer in range(plan.num_layers)
                 for k, seg in enumerate(segments(plan.chunk_counts[layer]))]
        start = next((i for i, (layer, k, _) in enumerate(order) if (layer, k) >= self._next), 0)
        out: list[tuple[int, int, int]] = []
        for i in range(len(order)):
            layer, k, (first, n) = order[(start + i) % len(order)]
            cost = bitmap_bytes(n)
            if cost > budget:
                break
            budget -= cost
            out.append((layer, first, n))
            self._next = (layer, k + 1)
        return out
