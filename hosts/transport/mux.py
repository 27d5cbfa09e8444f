"""The socket driver's event loop: a `Router` (hosts/transport/router.py) over an `Endpoint`."""
from __future__ import annotations

import time
from typing import Callable

from hosts.errors import PeerTimeout
from hosts.transport import data_route
from hosts.transport.endpoint import Endpoint
from hosts.transport.router import FUTURE_BYTES, FUTURE_PACKETS, FUTURE_ROUNDS, Router, Session

__all__ = ["FUTURE_BYTES", "FUTURE_PACKETS", "FUTURE_ROUNDS", "Mux", "Session"]

_IDLE_WAKE = 0.05


class Mux(Router):
    """The router of one UDP endpoint, with the blocking loop that feeds it from the socket and
    the host's clock."""

    endpoint: Endpoint
    # False: every arrival takes the reference path (parse, dispatch); tests and benchmarks
    # hold the routed path (data_route.py) to it
    route_data = True

    def __init__(self, endpoint: Endpoint) -> None:
        super().__init__(endpoint)

    def receive(self, timeout: float) -> None:
        """Wait up to `timeout` s for arrivals and dispatch them; on a batch endpoint DATA of
        native receive sessions goes to their cores without a Python object per datagram
        (data_route.py), in the same order and with the same outcome."""
        if self.route_data and data_route.can_route(self, self.endpoint):
            data_route.receive(self, self.endpoint, timeout)
            return
        for pkt in self.endpoint.receive(timeout):
            self.dispatch(pkt, time.monotonic())

    def drain(self) -> None:
        """Dispatch whatever is already waiting on the socket, without blocking."""
        try:
            self.receive(0.0)
        finally:
            self.endpoint.flush()

    def run(self, done: Callable[[], bool], timeout: float | None = None,
            timeout_message: str = "timed out") -> None:
        """Tick sessions and dispatch packets until `done()`; PeerTimeout after `timeout` s.
        What a step sent goes out before the loop waits (`Endpoint.receive` flushes first)
        and when it ends (a batching endpoint holds it until then)."""
        give_up = None if timeout is None else time.monotonic() + timeout
        try:
            while True:
                now = time.monotonic()
                wake = min(now + _IDLE_WAKE, self.tick(now))
                if done():
                    return
                if give_up is not None and now > give_up:
                    raise PeerTimeout(timeout_message)
                self.receive(wake - time.monotonic())
        finally:   # what the last step sent goes out however the loop ends
            self.endpoint.flush()
