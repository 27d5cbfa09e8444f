"""PS side of the UDP exchange (ltp, mlt): gather pushes from all workers, scatter the pull."""
from __future__ import annotations

import time
from typing import Callable

import numpy as np

from hosts import wire
from hosts.errors import PacketError, PeerTimeout
from hosts.exchange.config import TransportConfig, fingerprint
from hosts.exchange.results import Gathered
from hosts.pcn import answer_start
from hosts.transport.bounds import loss_budget_chunks
from hosts.transport.chunking import ChunkPlan
from hosts.transport.deadline import Deadline
from hosts.transport.endpoint import Endpoint, Received
from hosts.transport.mux import Mux
from hosts.transport.receiver import ReceiveOptions, RecvSession
from hosts.transport.sender import SendGroup, SendSession

_LAST_PULL_GRACE = 2.0
_EPOCH_COPIES = 2     # a KIND_EPOCH goes out twice: a worker that misses both waits, then asks
NextRound = Callable[[bool], "tuple[tuple[float, ...], int] | None"]


class UdpServerExchange:
    """One UDP endpoint (port 19527 by default) shared by every worker and round."""

    def __init__(self, config: TransportConfig, plan: ChunkPlan, workers: int,
                 bind: tuple[str, int]) -> None:
        self.config = config
        self.plan = plan
        self.workers = workers
        self.endpoint = Endpoint(bind, config.job_id, wire.PS_RANK, plain=config.plain)
        self.push_deadline = Deadline(config.push_deadline)
        self.counters = self.endpoint.counters
        self.mux = Mux(self.endpoint)
        self.addrs: dict[int, tuple[str, int]] = {}
        self.mux.handlers[wire.KIND_PULL_REQ] = self._on_pull_req
        self.mux.handlers[wire.KIND_PCN_START] = self._on_pcn_start
        self.mux.handlers[wire.KIND_HELLO] = self._on_hello
        self.mux.admit = self._admit
        self.names = {r: f"worker rank {r}" for r in range(workers)}
        self.fingerprint = fingerprint(plan.layer_sizes, plan.chunk_elems, config)

    def _admit(self, pkt: Received) -> bool:
        """Only a worker's bound address speaks for its rank (HELLO is how it gets bound)."""
        if pkt.header.kind == wire.KIND_HELLO:
            return True
        if pkt.header.kind == wire.KIND_PCN_START:
            return pkt.addr in self.addrs.values()
        return self.addrs.get(pkt.header.worker_rank) == pkt.addr

    def _on_hello(self, pkt: Received, now: float) -> bool:
        """Bind the worker's address to its rank and answer with our fingerprint.

        The first valid HELLO of a rank with our configuration binds it; from then on only that
        address speaks for the rank (a HELLO from elsewhere is ignored). A worker whose
        configuration differs is told our fingerprint and exits by itself.
        """
        rank = pkt.header.worker_rank
        try:
            theirs = wire.unpack_hello(pkt.payload)
        except PacketError:
            self.counters["drop_corrupt"] += 1
            return True
        bound = self.addrs.get(rank)
        if bound is not None and bound != pkt.addr:
            self.counters["drop_hello_rebind"] += 1
            return True
        if theirs != self.fingerprint and rank in self.names:
            self.counters["hello_config_mismatch"] += 1
            self.names[rank] = (f"worker rank {rank} (its HELLO showed a different model, "
                                f"--chunk-elems, --transport or --job)")
        elif theirs == self.fingerprint and rank in self.names and bound is None:
            self.addrs[rank] = pkt.addr
        self.endpoint.send_control(wire.KIND_HELLO_ACK, pkt.addr, pkt.header.round,
                                   payload=wire.HELLO.pack(self.fingerprint))
        return True

    def _on_pcn_start(self, pkt: Received, now: float) -> bool:
        answer_start(self.endpoint, pkt)
        return True

    def _on_pull_req(self, pkt: Received, now: float) -> bool:
        # A pull request from a worker that got nothing yet: resend what it lacks (if pulling).
        group = self.mux.get(pkt.header.round, True)
        if group is None:
            self.counters["early_pull_req"] += 1
            return True
        if pkt.header.worker_rank in self.addrs:
            group.on_packet(pkt, now)
        return True

    def _open_push(self, round_: int, required: tuple[float, ...]) -> RecvSession:
        session = self.mux.get(round_, False)
        if session is None:
            self.push_deadline.settings = self.config.push_deadline   # the policy may switch it
            absent = self.config.join_timeout if round_ == 0 else self.config.peer_timeout
            session = RecvSession(self.endpoint, self.plan, round_, pull=False,
                                  senders=list(range(self.workers)), required=required,
                                  options=ReceiveOptions(deadline=self.push_deadline.current(),
                                                         absent_timeout=absent,
                                                         scope=self.config.bounds.scope),
                                  sender_names=self.names)
            self.mux.add(session)
        return session

    def gather(self, round_: int, required: tuple[float, ...]) -> Gathered:
        """Run until every worker's push of `round_` closed (bound or deadline)."""
        session = self._open_push(round_, required)
        self.mux.run(lambda: session.done)
        self.mux.drain()
        self.mux.prune(round_ - 1)
        firsts = [s.first_data for s in session.senders.values() if s.first_data is not None]
        seconds = (session.finished or time.monotonic()) - min(firsts) if firsts else 0.0
        transfers = [s.closed_at - s.first_data for s in session.senders.values()
                     if s.first_data is not None and s.closed_at is not None]
        adaptation = None
        if transfers:
            adaptation = self.push_deadline.observe(max(transfers), session.telemetry, round_)
        return Gathered(
            values={r: s.buffer.values for r, s in session.senders.items()},
            delivered={r: s.buffer.delivered for r, s in session.senders.items()},
            fractions=session.fractions(), closed_by=session.closed_by(), seconds=seconds,
            deadline=session.options.deadline, telemetry=session.telemetry.as_dict(),
            adaptation=None if adaptation is None else adaptation.as_dict(),
            max_qdepth=session.max_qdepth)

    def scatter(self, round_: int, layers: list[np.ndarray], last: bool,
                next_required: tuple[float, ...] | None,
                next_round: NextRound | None = None) -> float:
        """Pull stage: send `layers` to every worker until each says STOP; seconds taken.
        The push session of the next round opens first, so early pushes are not lost. With
        `next_round` (a controller's policy) the next round's requirement and policy epoch come
        from it while the pull runs (None until known; with True it waits): the push session
        opens then and every worker is told the epoch (KIND_EPOCH)."""
        if next_round is None and not last and next_required is not None:
            self._open_push(round_ + 1, next_required)
        flags = wire.FLAG_LAST if last else 0
        budget = loss_budget_chunks(self.config.bounds.pull, self.plan, self.config.bounds.scope)
        group = SendGroup([
            SendSession(self.endpoint, self.addrs[rank], rank, self.plan, layers, round_,
                        pull=True, options=self.config.send, extra_flags=flags,
                        peer_name=self.names[rank],
                        critical_layers=self.config.bounds.critical_layers(pull=True),
                        loss_budget=budget)
            for rank in range(self.workers)])
        self.mux.add(group)
        t0 = time.monotonic()
        announced = next_round is None

        def announce(wait: bool) -> None:
            nonlocal announced
            upcoming = None if announced else next_round(wait)   # type: ignore[misc]
            if upcoming is not None:
                required, epoch = upcoming
                self._open_push(round_ + 1, required)
                for rank in range(self.workers):
                    for _ in range(_EPOCH_COPIES):
                        self.endpoint.send_control(wire.KIND_EPOCH, self.addrs[rank], round_ + 1,
                                                   chunk_seq=epoch)
                announced = True

        def pulled() -> bool:
            announce(False)
            return group.done

        try:
            self.mux.run(pulled, timeout=_LAST_PULL_GRACE if last else None,
                         timeout_message="final pull not acknowledged by every worker")
        except PeerTimeout:
            if not last:
                raise
            self.counters["final_pull_unacknowledged"] += 1
        seconds = time.monotonic() - t0
        announce(True)
        return seconds

    def describe(self) -> dict:
        """Nothing beyond the configuration to report for UDP (TCP reports its sockets)."""
        return {}

    def close(self) -> None:
        self.endpoint.close()
