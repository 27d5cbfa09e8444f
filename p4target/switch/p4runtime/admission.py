"""Admission of StreamChannels, so open streams can never starve the unary RPCs.

The gRPC server runs every RPC on one worker pool, and a StreamChannel holds its worker for as
long as it stays open. At most `limit` streams are open at once (set below the pool size, so
the rest of the pool is a reserve for Capabilities, Read, Write and the pipeline RPCs). When
the limit is reached a new stream evicts the oldest stream that cannot be a primary client: one
that has not arbitrated within `grace` seconds of opening, then one that arbitrated without an
election id. If no stream qualifies, the new stream is refused with RESOURCE_EXHAUSTED. A
stream with an election id is never evicted, so a controller keeps its session.
"""
from __future__ import annotations

import threading
import time
from typing import Any, Callable

from .errors import Code, P4RuntimeError

DEFAULT_STREAM_LIMIT = 16
ARBITRATION_GRACE_S = 1.0

# stream -> (arbitrated?, election id or None); given by Arbitration.membership
Membership = Callable[[Any], "tuple[bool, int | None]"]


class StreamAdmission:
    """Bounds the open StreamChannels; `admit` decides for a new one."""

    def __init__(self, membership: Membership, limit: int = DEFAULT_STREAM_LIMIT,
                 grace: float = ARBITRATION_GRACE_S, clock: Callable[[], float] = time.monotonic) -> None:
        if limit < 1:
            raise ValueError("stream limit must be >= 1")
        self.limit = limit
        self.grace = grace
        self._membership = membership
        self._clock = clock
        self._lock = threading.Lock()
        self._opened: dict[Any, float] = {}  # insertion order = opening order

    def __len__(self) -> int:
        with self._lock:
            return len(self._opened)

    def streams(self) -> list[Any]:
        """The admitted streams, oldest first."""
        with self._lock:
            return list(self._opened)

    def admit(self, stream: Any) -> Any | None:
        """Admit `stream`; returns the stream it evicts (the caller ends it) or None.
        Raises P4RuntimeError(RESOURCE_EXHAUSTED) when the limit is reached and nothing can go."""
        with self._lock:
            victim = None
            if len(self._opened) >= self.limit:
                victim = self._victim()
                if victim is None:
                    raise P4RuntimeError(
                        Code.RESOURCE_EXHAUSTED,
                        f"too many open StreamChannels ({len(self._opened)} of {self.limit}), "
                        "all held by arbitrated clients")
                del self._opened[victim]
            self._opened[stream] = self._clock()
            return victim

    def release(self, stream: Any) -> None:
        """A stream ended (idempotent)."""
        with self._lock:
            self._opened.pop(stream, None)

    def _victim(self) -> Any | None:
        now = self._clock()
        no_election_id = None
        for stream, opened in self._opened.items():
            arbitrated, election_id = self._membership(stream)
            if not arbitrated:
                if now - opened >= self.grace:
                    return stream
            elif election_id is None and no_election_id is None:
                no_election_id = stream
        return no_election_id


def eviction_error(limit: int) -> P4RuntimeError:
    """The status an evicted stream ends with."""
    return P4RuntimeError(Code.RESOURCE_EXHAUSTED,
                          f"StreamChannel closed to admit a new one: at most {limit} may be open, "
                          "and this one had not arbitrated with an election id")
