"""Routing of one port's packets to its sessions by (round, stage): pure, the drivers' common part."""
from __future__ import annotations

from typing import Callable, Protocol

from hosts import wire
from hosts.transport.port import Port, Received

# Packets of a round a few rounds ahead of every open session are kept (up to a cap) and
# replayed when that round's session opens: a fast peer may start before we are ready.
FUTURE_ROUNDS = 8
FUTURE_PACKETS = 8192
FUTURE_BYTES = 8 << 20    # of datagrams (a PS of 8 workers buffers a few rounds of 1 MB models)
INFINITY = float("inf")


class Session(Protocol):
    round: int
    pull: bool

    @property
    def active(self) -> bool: ...

    def tick(self, now: float) -> float: ...

    def on_packet(self, pkt: Received, now: float) -> None: ...


class Router:
    """Owns the sessions of one port. A packet goes to the session of its (round, PULL flag);
    kinds with a registered handler (PULL_REQ, PCN) go to the handler first. Packets of a
    round up to FUTURE_ROUNDS ahead wait (bounded in count and bytes) until its session is
    added. ``admit``, when set, sees every packet first; one it refuses is dropped and counted
    (``drop_wrong_source``) before any handler or session sees it. ``data_sources``, when set
    with it, is the rank -> address table ``admit`` judges DATA by (DATA is admitted exactly
    when ``data_sources.get(rank) == addr``), so a driver may admit DATA without calling it
    (hosts/transport/data_route.py). No socket, no clock: the driver calls `dispatch` with each
    arrival and `tick` when the returned time comes."""

    def __init__(self, endpoint: Port) -> None:
        self.endpoint = endpoint
        self.sessions: dict[tuple[int, bool], Session] = {}
        self.handlers: dict[int, Callable[[Received, float], bool]] = {}
        self.admit: Callable[[Received], bool] | None = None
        self.data_sources: dict[int, tuple[str, int]] | None = None
        self._pruned_below = 0
        self._future: list[Received] = []
        self._future_bytes = 0

    @staticmethod
    def _size(pkt: Received) -> int:
        return wire.HEADER_LEN + len(pkt.payload)

    def add(self, session: Session) -> None:
        key = (session.round, session.pull)
        self.sessions[key] = session
        if self._future:
            waiting = [p for p in self._future
                       if (p.header.round, bool(p.header.flags & wire.FLAG_PULL)) == key]
            if waiting:
                taken = {id(p) for p in waiting}
                self._future = [p for p in self._future if id(p) not in taken]
                self._future_bytes -= sum(map(self._size, waiting))
                now = self.endpoint.clock()
                for pkt in waiting:
                    session.on_packet(pkt, now)

    def get(self, round_: int, pull: bool) -> Session | None:
        return self.sessions.get((round_, pull))

    def prune(self, below_round: int) -> None:
        """Forget sessions of rounds < below_round; their packets now count as stale."""
        self._pruned_below = max(self._pruned_below, below_round)
        for key in [k for k in self.sessions if k[0] < below_round]:
            del self.sessions[key]
        self._future = [p for p in self._future if p.header.round >= below_round]
        self._future_bytes = sum(map(self._size, self._future))

    def tick(self, now: float) -> float:
        """Tick every active session; the earliest time one wants to be ticked again."""
        wake = INFINITY
        for session in list(self.sessions.values()):
            if session.active:
                wake = min(wake, session.tick(now))
        return wake

    def dispatch(self, pkt: Received, now: float) -> None:
        hdr = pkt.header
        if self.admit is not None and not self.admit(pkt):
            self.endpoint.counters["drop_wrong_source"] += 1
            return
        handler = self.handlers.get(hdr.kind)
        if handler is not None and handler(pkt, now):
            return
        session = self.sessions.get((hdr.round, bool(hdr.flags & wire.FLAG_PULL)))
        if session is None:
            newest = max((r for r, _ in self.sessions), default=self._pruned_below)
            if hdr.round < self._pruned_below or hdr.round < newest:
                self.endpoint.counters["drop_stale_round"] += 1
            elif hdr.round > newest + FUTURE_ROUNDS:
                self.endpoint.counters["drop_unknown_round"] += 1
            elif (len(self._future) < FUTURE_PACKETS
                  and self._future_bytes + self._size(pkt) <= FUTURE_BYTES):
                self._future.append(pkt)
                self._future_bytes += self._size(pkt)
                self.endpoint.counters["early_round_buffered"] += 1
            else:
                self.endpoint.counters["drop_early_round_full"] += 1
            return
        session.on_packet(pkt, now)
