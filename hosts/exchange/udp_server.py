"""PS side of the UDP exchange (ltp, mlt): gather pushes from all workers, scatter the pull.

The round protocol is `hosts.rounds.server.ServerRounds`; this module is its socket driver:
blocking calls that run the endpoint's loop until the machine closes the push or the pull."""
from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np

from hosts.errors import PeerTimeout
from hosts import wire
from hosts.exchange.config import TransportConfig, fingerprint
from hosts.exchange.join import JoinServer
from hosts.exchange.membership import Membership
from hosts.exchange.results import Gathered
from hosts.pcn import answer_start
from hosts.rounds.server import LOST, PullClosed, PushClosed, ServerRounds
from hosts.transport.chunking import ChunkPlan
from hosts.transport.endpoint import Endpoint
from hosts.transport.mux import Mux
from hosts.transport.port import Received

__all__ = ["LOST", "NextRound", "UdpServerExchange"]

NextRound = Callable[[bool], "tuple[tuple[float, ...], int] | None"]


class UdpServerExchange:
    """One UDP endpoint (port 19527 by default) shared by every worker and round."""

    def __init__(self, config: TransportConfig, plan: ChunkPlan, workers: int,
                 bind: tuple[str, int]) -> None:
        self.plan = plan
        self.workers = workers
        self.endpoint = Endpoint(bind, config.job_id, wire.PS_RANK, plain=config.plain,
                                 mac_key=config.mac_key, mac_mode=config.mac_mode, io=config.io)
        self.counters = self.endpoint.counters
        self.mux = Mux(self.endpoint)
        self.fingerprint = fingerprint(plan.layer_sizes, plan.chunking_key(), config)
        self.rounds = ServerRounds(self.mux, config, plan, workers,
                                   join=JoinServer(config.job_key, config.job_id, workers,
                                                   self.fingerprint, self.counters),
                                   fingerprint=self.fingerprint)
        self.mux.handlers[wire.KIND_PCN_START] = self._on_pcn_start

    @property
    def config(self) -> TransportConfig:
        return self.rounds.config

    @config.setter
    def config(self, config: TransportConfig) -> None:   # the policy may switch it per round
        self.rounds.config = config

    @property
    def membership(self) -> Membership:
        return self.rounds.membership

    @property
    def member_events(self) -> list[dict]:
        return self.rounds.member_events

    @property
    def addrs(self) -> dict[int, tuple[str, int]]:
        return self.rounds.addrs

    @property
    def names(self) -> dict[int, str]:
        return self.rounds.names

    def _on_pcn_start(self, pkt: Received, now: float) -> bool:
        answer_start(self.endpoint, pkt)
        return True

    def _until(self, kind: type, poll: Callable[[], None] | None = None) -> Any:
        """Run the endpoint and step the machine until it returns an event of `kind`;
        going on without a worker that stays silent past its absence timeout."""
        def due() -> bool:
            if poll is not None:
                poll()
            return self.rounds.due(time.monotonic())

        while True:
            for event in self.rounds.step(time.monotonic()).events:
                if isinstance(event, kind):
                    return event
            try:
                self.mux.run(due)
            except PeerTimeout:
                if not self.rounds.on_silence(time.monotonic()):
                    raise
            self.mux.drain()

    def gather(self, round_: int, required: tuple[float, ...]) -> Gathered:
        """Run until every worker's push of `round_` closed (bound or deadline)."""
        self.rounds.begin_push(round_, required)
        closed: PushClosed = self._until(PushClosed)
        return closed.gathered

    def scatter(self, round_: int, layers: list[np.ndarray], last: bool,
                next_required: tuple[float, ...] | None,
                next_round: NextRound | None = None) -> float:
        """Pull stage: send `layers` to every worker until each says STOP; seconds taken.
        The push session of the next round opens first, so early pushes are not lost. With
        `next_round` (a controller's policy) the next round's requirement and policy epoch come
        from it while the pull runs (None until known; with True it waits): the push session
        opens then and every worker is told the epoch (KIND_EPOCH).
        Fewer than --min-workers present: wait (up to --outage-horizon) for workers to join."""
        t0 = time.monotonic()
        self.rounds.begin_pull(round_, layers, last,
                               next_required if next_round is None else None)
        announced = next_round is None

        def announce(wait: bool) -> None:
            nonlocal announced
            upcoming = None if announced else next_round(wait)   # type: ignore[misc]
            if upcoming is not None:
                required, epoch = upcoming
                self.rounds.announce(round_ + 1, required, epoch)
                announced = True

        def poll() -> None:
            if self.rounds.pull is not None:   # the pull started (the quorum is there)
                announce(False)

        self._until(PullClosed, poll)
        seconds = time.monotonic() - t0
        announce(True)
        return seconds

    def describe(self) -> dict:
        """Nothing beyond the configuration to report for UDP (TCP reports its sockets)."""
        return {}

    def close(self) -> None:
        self.endpoint.close()
