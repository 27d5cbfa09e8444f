"""PS side of the UDP exchange (ltp, mlt): gather pushes from all workers, scatter the pull."""
from __future__ import annotations

import time
from typing import Callable

import numpy as np

from hosts import wire
from hosts.errors import PeerTimeout
from hosts.exchange.config import TransportConfig, fingerprint
from hosts.exchange.join import JoinServer
from hosts.exchange.membership import Membership
from hosts.exchange.results import Gathered
from hosts.pcn import answer_start
from hosts.transport.bounds import LossBudget
from hosts.transport.chunking import ChunkPlan
from hosts.transport.congestion import Window
from hosts.transport.deadline import Deadline
from hosts.transport.endpoint import Endpoint
from hosts.transport.mux import Mux
from hosts.transport.port import Received
from hosts.transport.receiver import ReceiveOptions, RecvSession
from hosts.transport.sender import SendGroup, SendSession, new_window

_LAST_PULL_GRACE = 2.0
_EPOCH_COPIES = 2     # a KIND_EPOCH goes out twice: a worker that misses both waits, then asks
NextRound = Callable[[bool], "tuple[tuple[float, ...], int] | None"]
_QUORUM_POLL = 0.2
LOST = ("absent", "rejoined")   # how a push closes that the round goes on without


class UdpServerExchange:
    """One UDP endpoint (port 19527 by default) shared by every worker and round."""

    def __init__(self, config: TransportConfig, plan: ChunkPlan, workers: int,
                 bind: tuple[str, int]) -> None:
        self.config = config
        self.plan = plan
        self.workers = workers
        self.endpoint = Endpoint(bind, config.job_id, wire.PS_RANK, plain=config.plain,
                                 mac_key=config.mac_key,
                                 mac_mode=config.mac_mode)
        self.push_deadline = Deadline(config.push_deadline)
        self.counters = self.endpoint.counters
        self.mux = Mux(self.endpoint)
        self.addrs: dict[int, tuple[str, int]] = {}
        self.mux.handlers[wire.KIND_PULL_REQ] = self._on_pull_req
        self.mux.handlers[wire.KIND_PCN_START] = self._on_pcn_start
        self.mux.handlers[wire.KIND_HELLO] = self._on_hello
        self.mux.admit = self._admit
        self.names = {r: f"worker rank {r}" for r in range(workers)}
        self.fingerprint = fingerprint(plan.layer_sizes, plan.chunking_key(), config)
        self.join = JoinServer(config.job_key, config.job_id, workers, self.fingerprint,
                               self.counters)
        self.membership = Membership(workers)   # the PS sets its flags' limits
        self.member_events: list[dict] = []     # absences and re-admissions, for the PS's log
        self.pull_windows: dict[int, Window | None] = {}   # per rank, kept over rounds

    def _admit(self, pkt: Received) -> bool:
        """Only a worker's bound address speaks for its rank (HELLO is how it gets bound)."""
        if pkt.header.kind == wire.KIND_HELLO:
            return True
        if pkt.header.kind == wire.KIND_PCN_START:
            return pkt.addr in self.addrs.values()
        return self.addrs.get(pkt.header.worker_rank) == pkt.addr

    def _on_hello(self, pkt: Received, now: float) -> bool:
        """Run the join handshake (hosts/exchange/join.py); bind a rank to its address.

        Only a fresh proof of the job's key with our configuration binds a rank. A proof for a
        bound rank from a new address is a restarted worker (the proof is bound to the address
        that got the challenge): the rank moves there, the old address is heard no more and
        what it left open is closed. A proof sent again changes nothing (it gets the welcome
        again). A proven worker whose configuration differs is told our fingerprint and exits
        by itself.
        """
        rank = pkt.header.worker_rank
        answer = self.join.on_hello(rank, pkt.addr, pkt.payload)
        first_push = pkt.header.round
        if answer.proven:
            bound = self.addrs.get(rank)
            moved = bound is not None and bound != pkt.addr
            if not answer.fresh:
                if moved:     # replayed from an address the rank moved away from
                    self.counters["drop_hello_replay"] += 1
                    return True
                first_push = self.membership.first_push[rank]
            elif answer.fingerprint != self.fingerprint:
                self.counters["hello_config_mismatch"] += 1
                self.names[rank] = (f"worker rank {rank} (its HELLO showed a different model, "
                                    f"--chunk-elems, --transport or --job)")
            else:
                self.addrs[rank] = pkt.addr
                self.pull_windows[rank] = new_window(self.config.send)   # a (re)joined worker
                if moved:
                    self._rebind(rank, bound, pkt.addr)
                first_push, again = self.membership.hello(rank, restarted=moved)
                if again:
                    self._readmit(rank, first_push)
        if answer.reply is not None:
            # The welcome's round is the first round the worker pushes (0 at the start); a
            # later one tells a re-joining worker to pull the round before it whole first.
            self.endpoint.send_control(wire.KIND_HELLO_ACK, pkt.addr, first_push,
                                       payload=answer.reply)
        return True

    def _rebind(self, rank: int, old: tuple[str, int], new: tuple[str, int]) -> None:
        """``rank`` proved the key from a new address: it speaks from there from now on."""
        self.counters["hello_rebind"] += 1
        self.member_events.append({"rank": rank, "change": "rebound",
                                   "from": f"{old[0]}:{old[1]}", "to": f"{new[0]}:{new[1]}"})

    def _readmit(self, rank: int, first_push: int) -> None:
        """A worker joined again: what it still owed in earlier rounds is lost."""
        self._leave_open_rounds(rank, "rejoined", first_push)
        self.member_events.append({"rank": rank, "change": "rejoined", "first_push": first_push,
                                   "pulls_whole": first_push - 1})

    def _leave_open_rounds(self, rank: int, why: str, before: int | None = None) -> None:
        """Close ``rank``'s open pushes and drop it from open pulls (of rounds < ``before``)."""
        for (round_, pull), session in list(self.mux.sessions.items()):
            if before is not None and round_ >= before:
                continue
            if not pull and isinstance(session, RecvSession):
                session.close_sender(rank, why)
            elif pull and isinstance(session, SendGroup):
                session.by_rank.pop(rank, None)
                if not session.by_rank:   # nobody left to pull this round
                    del self.mux.sessions[(round_, pull)]

    def _absent(self, now: float) -> list[int]:
        """Ranks silent past their absence timeout in an open push or pull."""
        silent = set()
        for session in self.mux.sessions.values():
            if isinstance(session, RecvSession):
                limit = session.options.absent_timeout
                silent |= {r for r, st in session.senders.items() if st.closed_by is None
                           and st.first_data is None
                           and now - max(session.opened, st.last_heard or 0.0) > limit}
            elif isinstance(session, SendGroup):
                silent |= {r for r, snd in session.by_rank.items() if not snd.done
                           and now - snd.last_heard > snd.options.peer_timeout}
        return sorted(silent)

    def _run(self, done, round_: int, **kwargs) -> None:  # noqa: ANN001 - Mux.run's arguments
        """Mux.run, going on without a worker that stays silent past its absence timeout."""
        while True:
            try:
                self.mux.run(done, **kwargs)
                return
            except PeerTimeout:
                silent = self._absent(time.monotonic())
                if not silent:
                    raise
                for rank in silent:
                    if self.membership.mark_absent(rank, round_):
                        self.member_events.append({"rank": rank, "change": "absent", "round": round_})
                    self._leave_open_rounds(rank, "absent")

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
                                  senders=self.membership.pushers(round_), required=required,
                                  options=ReceiveOptions(deadline=self.push_deadline.current(),
                                                         absent_timeout=absent,
                                                         scope=self.config.bounds.scope,
                                                         ack_delay=self.config.ack_delay),
                                  sender_names=self.names)
            self.mux.add(session)
        return session

    def gather(self, round_: int, required: tuple[float, ...]) -> Gathered:
        """Run until every worker's push of `round_` closed (bound or deadline)."""
        self.membership.next_pull = round_
        session = self._open_push(round_, required)
        self._run(lambda: session.done, round_)
        self.mux.drain()
        self.mux.prune(round_ - 1)
        lost = sorted({*(r for r, s in session.senders.items() if s.closed_by in LOST),
                       *self.membership.missing(round_)})
        for rank in lost:
            self.membership.contribution_lost(rank)
        kept = {r: s for r, s in session.senders.items() if r not in lost}
        for rank, state in kept.items():   # (a re-admitted rank's earlier data is not news)
            if state.first_data is not None:
                self.membership.data_from(rank)
        firsts = [s.first_data for s in session.senders.values() if s.first_data is not None]
        seconds = (session.finished or time.monotonic()) - min(firsts) if firsts else 0.0
        transfers = [s.closed_at - s.first_data for s in session.senders.values()
                     if s.first_data is not None and s.closed_at is not None]
        adaptation = None
        if transfers:
            adaptation = self.push_deadline.observe(max(transfers), session.telemetry, round_)
        return Gathered(
            values={r: s.buffer.values for r, s in kept.items()},
            delivered={r: s.buffer.delivered for r, s in kept.items()},
            fractions=session.fractions(), closed_by=session.closed_by(), seconds=seconds,
            deadline=session.options.deadline, telemetry=session.telemetry.as_dict(),
            adaptation=None if adaptation is None else adaptation.as_dict(),
            max_qdepth=session.max_qdepth, lost=lost,
            start_spread=max(firsts) - min(firsts) if len(firsts) > 1 else None)

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
        while not self.membership.check_quorum(round_):
            until = time.monotonic() + _QUORUM_POLL
            self.mux.run(lambda: time.monotonic() >= until)
        pullers = self.membership.pullers(round_)
        self.membership.next_pull = round_ + 1
        if next_round is None and not last and next_required is not None:
            self._open_push(round_ + 1, next_required)
        flags = wire.FLAG_LAST if last else 0
        budget = LossBudget.of(self.config.bounds.pull, self.plan, self.config.bounds.scope)
        group = SendGroup([
            SendSession(self.endpoint, self.addrs[rank], rank, self.plan, layers, round_,
                        pull=True, options=self.config.send, extra_flags=flags,
                        peer_name=self.names[rank],
                        critical_layers=self.config.bounds.critical_layers(pull=True),
                        budget=budget, window=self.pull_windows.get(rank))
            for rank in pullers])
        self.mux.add(group)
        announced = next_round is None

        def announce(wait: bool) -> None:
            nonlocal announced
            upcoming = None if announced else next_round(wait)   # type: ignore[misc]
            if upcoming is not None:
                required, epoch = upcoming
                self._open_push(round_ + 1, required)
                for rank in pullers:
                    for _ in range(_EPOCH_COPIES):
                        self.endpoint.send_control(wire.KIND_EPOCH, self.addrs[rank], round_ + 1,
                                                   chunk_seq=epoch)
                announced = True

        def pulled() -> bool:
            announce(False)
            return group.done

        try:
            self._run(pulled, round_, timeout=_LAST_PULL_GRACE if last else None,
                      timeout_message="final pull not acknowledged by every worker")
        except PeerTimeout:
            if not last:
                raise
            self.counters["final_pull_unacknowledged"] += 1
        for rank, sender in group.by_rank.items():
            if sender.done:
                self.membership.data_from(rank)
        seconds = time.monotonic() - t0
        announce(True)
        return seconds

    def describe(self) -> dict:
        """Nothing beyond the configuration to report for UDP (TCP reports its sockets)."""
        return {}

    def close(self) -> None:
        self.endpoint.close()
