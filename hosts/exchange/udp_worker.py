"""Worker side of the UDP exchange (ltp, mlt): push gradients, then receive the pull.

The round protocol is `hosts.rounds.worker.WorkerRounds`; this module is its socket driver:
blocking calls that run the endpoint's loop until the machine reports what the call waits for."""
from __future__ import annotations

import time
from typing import Any

import numpy as np

from hosts.errors import PeerTimeout
from hosts.exchange.config import TransportConfig, fingerprint
from hosts.exchange.results import Pulled
from hosts.pcn import PcnClient
from hosts.rounds.worker import Joined, PullClosed, PushClosed, WorkerRounds
from hosts.transport.chunking import ChunkPlan
from hosts.transport.endpoint import Endpoint
from hosts.transport.mux import Mux
from hosts import wire

_LINGER = 0.3


class UdpWorkerExchange:
    """One UDP endpoint toward the parameter server at `ps`."""

    def __init__(self, config: TransportConfig, plan: ChunkPlan, rank: int,
                 ps: tuple[str, int], bind: tuple[str, int]) -> None:
        self.plan = plan
        self.rank = rank
        self.ps = ps
        self.endpoint = Endpoint(bind, config.job_id, rank, plain=config.plain, peer=ps,
                                 mac_key=config.mac_key, mac_mode=config.mac_mode, io=config.io)
        self.counters = self.endpoint.counters
        self.mux = Mux(self.endpoint)
        self.pcn = (PcnClient(self.mux, ps, config.pcn_threshold, config.pcn_timeout)
                    if config.pcn else None)
        self.fingerprint = fingerprint(plan.layer_sizes, plan.chunking_key(), config)
        self.rounds = WorkerRounds(self.mux, config, plan, rank, ps, self.fingerprint)
        self._events: list[Any] = []    # what the machine reported that no call took yet

    @property
    def config(self) -> TransportConfig:
        return self.rounds.config

    @config.setter
    def config(self, config: TransportConfig) -> None:   # the policy may switch it per round
        self.rounds.config = config

    def _until(self, *kinds: type) -> Any:
        """Run the endpoint and step the machine until it reports an event of one of `kinds`
        (events of other kinds wait for the call that takes them)."""
        while True:
            self._events += self.rounds.step(time.monotonic()).events
            for i, event in enumerate(self._events):
                if isinstance(event, kinds):
                    return self._events.pop(i)
            self.mux.run(lambda: self.rounds.due(time.monotonic()))
            self.mux.drain()

    def announced_epoch(self, round_: int, wait: float) -> int | None:
        """The policy epoch the PS announced for `round_`, waiting up to `wait` s for it (the
        PS announces while it scatters the round before); None if it did not arrive."""
        if round_ not in self.rounds.announced and wait > 0:
            end = time.monotonic() + wait
            self.mux.run(lambda: round_ in self.rounds.announced or time.monotonic() >= end)
        return self.rounds.announced.get(round_)

    def join(self, timeout: float | None = None, forget_below: int = 0) -> int:
        """Join the PS with the job's key (hosts/exchange/join.py), resending until it answers
        (up to ``timeout``, default --join-timeout); the first round we push (0 at the start;
        later when the job runs already: see `catch_up`). Sessions of rounds below
        ``forget_below`` (given up on) are dropped first. ConfigError if its model or transport
        configuration differs from ours."""
        timeout = self.config.join_timeout if timeout is None else timeout
        self._events.clear()
        self.rounds.begin_join(time.monotonic(), timeout, forget_below)
        joined: Joined = self._until(Joined)
        return joined.first_push

    def catch_up(self, round_: int) -> Pulled:
        """After joining a running job: receive the pull of ``round_`` whole (the current
        model), with no deadline."""
        self.rounds.catch_up(round_, time.monotonic())
        return self.pull(round_)

    def push(self, round_: int, layers: list[np.ndarray]) -> dict:
        """Send this round's gradients until the PS says STOP (or the round's pull closed
        first); stats of the push."""
        stats: dict = {}
        if self.pcn is not None:
            stats["pcn_rtt_ms"] = self.pcn.handshake(round_)
        self.rounds.begin(round_, layers)
        sender = self.rounds.sender
        assert sender is not None
        event = self._until(PushClosed, PullClosed)
        if isinstance(event, PullClosed):   # the pull closed before our push's STOP came
            self._events.insert(0, event)
        stats.update(push_s=sender.stats.seconds, retransmissions=sender.stats.retransmissions,
                     data_packets=sender.stats.data_packets, probes=sender.stats.probes,
                     closed_by=sender.stats.closed_by,
                     **sender.window_summary())
        return stats

    def pull(self, round_: int) -> Pulled:
        """Receive this round's parameters until the pull bound or deadline is met."""
        t0 = time.monotonic()
        closed: PullClosed = self._until(PullClosed)
        state, session = closed.state, closed.session
        buf = state.buffer
        end = max(closed.at, t0)
        first = state.first_data if state.first_data is not None else end
        return Pulled(values=buf.values, delivered=buf.delivered, fractions=buf.fractions(),
                      closed_by=state.closed_by, last=bool(state.flags_seen & wire.FLAG_LAST),
                      seconds=end - t0, wait=max(min(first, end) - t0, 0.0),
                      deadline=session.options.deadline,
                      telemetry=session.telemetry.as_dict(),
                      adaptation=None if closed.adaptation is None else closed.adaptation.as_dict())

    def linger(self) -> None:
        """Answer late probes of the final round for a moment (a lost STOP) before exiting."""
        end = time.monotonic() + _LINGER
        try:
            self.mux.run(lambda: time.monotonic() >= end)
        except PeerTimeout:
            pass

    def describe(self) -> dict:
        """Nothing beyond the configuration to report for UDP (TCP reports its sockets)."""
        return {}

    def close(self) -> None:
        self.endpoint.close()
