"""Admission of StreamChannels, so open streams can never starve the unary RPCs nor lock out a
controller.

The gRPC server runs every RPC on one worker pool, and a StreamChannel holds its worker for as
long as it stays open. At most `limit` streams are open at once (set below the pool size, so
the rest of the pool is a reserve for Capabilities, Read, Write and the pipeline RPCs).

When the limit is reached a new stream evicts one that is not needed to keep the switch
controlled, in this order: the oldest stream that has not arbitrated within `grace` seconds of
opening; the oldest that arbitrated without an election id; a backup (an election id that is
not its role's primary); the primary of a role other than the default one. Backups and
named-role primaries are taken from the peer that holds the most streams, oldest first. The
primary of the default role (the controller) is never evicted, and neither is a stream still
within its grace period: if only those are open, the new stream is refused with
RESOURCE_EXHAUSTED. So a controller that restarts always finds room, however many backup
streams others hold.

Backups are also capped per peer (`per_peer`): a peer that already holds that many arbitrated
non-primary streams loses its oldest one when it opens another. A peer is the client
certificate's common name on a TLS channel with client authentication, else the client's
address without its port.
"""
from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any, Callable, NamedTuple

from .errors import Code, P4RuntimeError

DEFAULT_STREAM_LIMIT = 16
DEFAULT_BACKUPS_PER_PEER = 4
ARBITRATION_GRACE_S = 1.0
DEFAULT_ROLE = ""


class Standing(NamedTuple):
    """A stream's place in arbitration."""

    arbitrated: bool
    election_id: int | None = None
    primary: bool = False
    role: str = DEFAULT_ROLE

    @property
    def backup(self) -> bool:
        """Arbitrated and not its role's primary."""
        return self.arbitrated and not self.primary


# stream -> its Standing; given by Arbitration.standing
Membership = Callable[[Any], Standing]


class StreamAdmission:
    """Bounds the open StreamChannels; `admit` decides for a new one."""

    def __init__(self, membership: Membership, limit: int = DEFAULT_STREAM_LIMIT,
                 grace: float = ARBITRATION_GRACE_S, clock: Callable[[], float] = time.monotonic,
                 per_peer: int = DEFAULT_BACKUPS_PER_PEER) -> None:
        if limit < 1 or per_peer < 1:
            raise ValueError("stream limit and backups per peer must be >= 1")
        self.limit = limit
        self.per_peer = per_peer
        self.grace = grace
        self._membership = membership
        self._clock = clock
        self._lock = threading.Lock()
        self._opened: dict[Any, tuple[float, str]] = {}  # stream -> (opened at, peer); insertion order

    def __len__(self) -> int:
        with self._lock:
            return len(self._opened)

    def streams(self) -> list[Any]:
        """The admitted streams, oldest first."""
        with self._lock:
            return list(self._opened)

    def admit(self, stream: Any, peer: str = "") -> Any | None:
        """Admit `stream` of `peer`; returns the stream it evicts (the caller ends it) or None.
        Raises P4RuntimeError(RESOURCE_EXHAUSTED) when the limit is reached and nothing can go."""
        with self._lock:
            standings = {s: self._membership(s) for s in self._opened}
            victim = None
            own_backups = [s for s, (_, p) in self._opened.items() if p == peer and standings[s].backup]
            if len(own_backups) >= self.per_peer:
                victim = self._victim(standings, only=set(own_backups))
            if victim is None and len(self._opened) >= self.limit:
                victim = self._victim(standings)
                if victim is None:
                    raise P4RuntimeError(
                        Code.RESOURCE_EXHAUSTED,
                        f"too many open StreamChannels ({len(self._opened)} of {self.limit}): the rest "
                        "are the controller's or still within their arbitration grace period")
            if victim is not None:
                del self._opened[victim]
            self._opened[stream] = (self._clock(), peer)
            return victim

    def release(self, stream: Any) -> None:
        """A stream ended (idempotent)."""
        with self._lock:
            self._opened.pop(stream, None)

    def _victim(self, standings: dict[Any, Standing], only: set[Any] | None = None) -> Any | None:
        now = self._clock()
        pool = [(s, opened, peer) for s, (opened, peer) in self._opened.items() if only is None or s in only]
        for s, opened, _ in pool:
            if not standings[s].arbitrated and now - opened >= self.grace:
                return s
        for s, _, _ in pool:
            st = standings[s]
            if st.arbitrated and st.election_id is None and not st.primary:
                return s
        held = Counter(peer for _, peer in self._opened.values())
        by_peer = sorted(pool, key=lambda item: -held[item[2]])  # stable: oldest first within a peer
        for s, _, _ in by_peer:
            if standings[s].backup:
                return s
        for s, _, _ in by_peer:
            st = standings[s]
            if st.primary and st.role != DEFAULT_ROLE:
                return s
        return None


def eviction_error(limit: int) -> P4RuntimeError:
    """The status an evicted stream ends with."""
    return P4RuntimeError(Code.RESOURCE_EXHAUSTED,
                          f"StreamChannel closed to admit a new one: at most {limit} may be open, and "
                          "this one was not the controller's (a backup, idle, or too many from its peer)")
