"""The event loop of one endpoint: routes packets to sessions by (round, stage) and ticks them."""
from __future__ import annotations

import time
from typing import Callable, Protocol

from hosts import wire
from hosts.errors import PeerTimeout
from hosts.transport.endpoint import Endpoint, Received

_IDLE_WAKE = 0.05


class Session(Protocol):
    round: int
    pull: bool

    @property
    def active(self) -> bool: ...

    def tick(self, now: float) -> float: ...

    def on_packet(self, pkt: Received, now: float) -> None: ...


class Mux:
    """Owns the sessions of one endpoint. A packet goes to the session of its (round, PULL flag);
    kinds with a registered handler (PULL_REQ, PCN) go to the handler first."""

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        self.sessions: dict[tuple[int, bool], Session] = {}
        self.handlers: dict[int, Callable[[Received, float], bool]] = {}
        self._pruned_below = 0

    def add(self, session: Session) -> None:
        self.sessions[(session.round, session.pull)] = session

    def get(self, round_: int, pull: bool) -> Session | None:
        return self.sessions.get((round_, pull))

    def prune(self, below_round: int) -> None:
        """Forget sessions of rounds < below_round; their packets now count as stale."""
        self._pruned_below = max(self._pruned_below, below_round)
        for key in [k for k in self.sessions if k[0] < below_round]:
            del self.sessions[key]

    def dispatch(self, pkt: Received, now: float) -> None:
        hdr = pkt.header
        handler = self.handlers.get(hdr.kind)
        if handler is not None and handler(pkt, now):
            return
        session = self.sessions.get((hdr.round, bool(hdr.flags & wire.FLAG_PULL)))
        if session is None:
            stale = hdr.round < self._pruned_below or any(
                hdr.round < r for r, _ in self.sessions)
            self.endpoint.counters["drop_stale_round" if stale else "drop_unknown_round"] += 1
            return
        session.on_packet(pkt, now)

    def drain(self) -> None:
        """Dispatch whatever is already waiting on the socket, without blocking."""
        for pkt in self.endpoint.receive(0.0):
            self.dispatch(pkt, time.monotonic())

    def run(self, done: Callable[[], bool], timeout: float | None = None,
            timeout_message: str = "timed out") -> None:
        """Tick sessions and dispatch packets until `done()`; PeerTimeout after `timeout` s."""
        give_up = None if timeout is None else time.monotonic() + timeout
        while True:
            now = time.monotonic()
            wake = now + _IDLE_WAKE
            for session in list(self.sessions.values()):
                if session.active:
                    wake = min(wake, session.tick(now))
            if done():
                return
            if give_up is not None and now > give_up:
                raise PeerTimeout(timeout_message)
            for pkt in self.endpoint.receive(wake - time.monotonic()):
                self.dispatch(pkt, time.monotonic())
