"""How much a receiver may answer to PROBEs: a bounded rate per sender, and never more bytes
than the PROBE carried times ANSWER_FACTOR.

A PROBE's answer is one BITMAP per layer, often more bytes than a header-only PROBE. So a
sender pads its PROBE with zeros (`probe_padding`) until the whole answer fits the budget;
an unpadded or spoofed PROBE gets only as many BITMAPs as its own size pays for (the next
PROBE gets the next layers), and PROBEs beyond the rate get nothing.
"""
from __future__ import annotations

import math

from hosts import wire
from hosts.transport.chunking import ChunkPlan
from hosts.transport.packet_mac import TAG_BYTES

ANSWER_FACTOR = 2
ANSWERS_PER_SECOND = 200.0    # ten times the default probe rate (--probe-ms 20)
ANSWER_BURST = 8.0


def bitmap_bytes(chunks: int) -> int:
    """Datagram bytes of one layer's BITMAP."""
    return wire.HEADER_LEN + (chunks + 7) // 8


def probe_padding(plan: ChunkPlan) -> int:
    """Zero bytes a PROBE carries so that the BITMAPs of every layer fit its answer budget
    (at most a full datagram, with room for a --packet-mac trailer: larger answers take several
    PROBEs)."""
    answer = sum(bitmap_bytes(c) for c in plan.chunk_counts)
    return min(max(math.ceil(answer / ANSWER_FACTOR) - wire.HEADER_LEN, 0),
               wire.MAX_DATA_PAYLOAD - TAG_BYTES)


def valid_padding(payload: bytes) -> bool:
    """A PROBE's payload is zeros only, at most one datagram's worth."""
    return len(payload) <= wire.MAX_DATA_PAYLOAD and not payload.strip(b"\0")


class ProbeAnswers:
    """One sender's PROBE answers: a token bucket (rate and burst) and which layer comes next."""

    def __init__(self) -> None:
        self._tokens = ANSWER_BURST
        self._at: float | None = None
        self._next_layer = 0

    def allow(self, now: float) -> bool:
        """Whether a PROBE arriving at `now` may be answered at all (takes a token)."""
        if self._at is not None:
            self._tokens = min(ANSWER_BURST, self._tokens + (now - self._at) * ANSWERS_PER_SECOND)
        self._at = now
        if self._tokens < 1.0:
            return False
        self._tokens -= 1.0
        return True

    def layers(self, plan: ChunkPlan, probe_bytes: int) -> list[int]:
        """The layers whose BITMAPs fit the budget of a PROBE of `probe_bytes` (datagram),
        in turn from where the last answer stopped; at least one, if even that one fits."""
        budget = ANSWER_FACTOR * probe_bytes
        out: list[int] = []
        n = plan.num_layers
        for i in range(n):
            layer = (self._next_layer + i) % n
            cost = bitmap_bytes(plan.chunk_counts[layer])
            if cost > budget:
                break
            budget -= cost
            out.append(layer)
        if out:
            self._next_layer = (out[-1] + 1) % n
        return out
