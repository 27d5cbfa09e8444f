"""The parameter server's rounds as a socket-free state machine.

One round: `begin_push` opens the receiver of every present worker's push; a step that finds
it closed returns `PushClosed` (what was gathered, and who the round went on without). The
driver aggregates, then `begin_pull` sends the result to every worker present (once at least
--min-workers are); a step that finds every worker's STOP returns `PullClosed`. The push of
the next round opens before the pull starts, so a fast worker's push is not lost. Joins
(HELLO), re-admissions, absences (`on_silence`) and policy epochs (`announce`) go through
`Membership` (hosts/exchange/membership.py) and the same machine.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hosts import wire
from hosts.exchange.config import TransportConfig
from hosts.exchange.join import JoinServer
from hosts.exchange.membership import Membership
from hosts.exchange.results import Gathered
from hosts.rounds.cadence import EPOCH_COPIES, LAST_PULL_GRACE, QUORUM_POLL
from hosts.rounds.step import INFINITY, Step
from hosts.transport.bounds import LossBudget
from hosts.transport.chunking import ChunkPlan
from hosts.transport.congestion import Window
from hosts.transport.deadline import Deadline
from hosts.transport.port import Received
from hosts.transport.core import recv_session
from hosts.transport.receiver import RecvSession
from hosts.transport.router import Router
from hosts.transport.sender import SendGroup, SendSession, new_window

LOST = ("absent", "rejoined")   # how a push closes that the round goes on without


@dataclass
class PushClosed:
    """Every present worker's push of `round` closed (bound, deadline or absence)."""

    round: int
    gathered: Gathered
    session: RecvSession


@dataclass
class PullClosed:
    """The pull of `round` ended: every worker said STOP (`acknowledged`), or the final
    pull's grace ran out first."""

    round: int
    group: SendGroup
    acknowledged: bool = True


@dataclass
class _PendingPull:
    round: int
    layers: list[np.ndarray]
    last: bool
    next_required: tuple[float, ...] | None


class ServerRounds:
    """The PS's round protocol over one router (see the module docstring).

    `join`: the handshake that binds ranks to addresses (HELLO); a driver that knows the
    workers' addresses (ns-3) calls `bind` instead. `fingerprint` is the configuration's,
    which a joining worker must present."""

    def __init__(self, router: Router, config: TransportConfig, plan: ChunkPlan, workers: int,
                 join: JoinServer | None = None, fingerprint: int | None = None) -> None:
        self.router = router
        self.port = router.endpoint
        self.counters = self.port.counters
        self.config = config
        self.plan = plan
        self.workers = workers
        self.join = join
        self.fingerprint = fingerprint
        self.push_deadline = Deadline(config.push_deadline)
        self.membership = Membership(workers)   # the PS sets its flags' limits
        self.member_events: list[dict] = []     # absences and re-admissions, for the PS's log
        self.addrs: dict[int, tuple[str, int]] = {}
        self.names = {r: f"worker rank {r}" for r in range(workers)}
        self.pull_windows: dict[int, Window | None] = {}   # per rank, kept over rounds
        self.round = 0
        self.push: RecvSession | None = None     # the push a step waits to close
        self.pull: SendGroup | None = None       # the pull a step waits to close
        self._pending: _PendingPull | None = None
        self._pullers: list[int] = []            # the ranks of the last pull started
        self._wake = INFINITY
        router.handlers[wire.KIND_PULL_REQ] = self.on_pull_req
        router.handlers[wire.KIND_HELLO] = self.on_hello
        router.admit = self.admit
        router.data_sources = self.addrs

    # -- who takes part ---------------------------------------------------------------------
    def bind(self, rank: int, addr: tuple[str, int]) -> None:
        """``rank`` speaks from ``addr`` (a fresh pull window: a (re)joined worker)."""
        self.addrs[rank] = addr
        self.pull_windows[rank] = new_window(self.config.send)

    def admit(self, pkt: Received) -> bool:
        """Only a worker's bound address speaks for its rank (HELLO is how it gets bound);
        DATA by `addrs` alone, the router's `data_sources`."""
        if pkt.header.kind == wire.KIND_HELLO:
            return True
        if pkt.header.kind == wire.KIND_PCN_START:
            return pkt.addr in self.addrs.values()
        return self.addrs.get(pkt.header.worker_rank) == pkt.addr

    def on_hello(self, pkt: Received, now: float) -> bool:
        """Run the join handshake (hosts/exchange/join.py); bind a rank to its address.

        Only a fresh proof of the job's key with our configuration binds a rank. A proof for a
        bound rank from a new address is a restarted worker (the proof is bound to the address
        that got the challenge): the rank moves there, the old address is heard no more and
        what it left open is closed. A proof sent again changes nothing (it gets the welcome
        again). A proven worker whose configuration differs is told our fingerprint and exits
        by itself.
        """
        if self.join is None:
            self.counters["drop_hello_unexpected"] += 1
            return True
        rank = pkt.header.worker_rank
        answer = self.join.on_hello(rank, pkt.addr, pkt.payload, now)
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
                self.bind(rank, pkt.addr)
                if moved:
                    self._rebind(rank, bound, pkt.addr)
                first_push, again = self.membership.hello(rank, restarted=moved)
                if again:
                    self._readmit(rank, first_push)
        if answer.reply is not None:
            # The welcome's round is the first round the worker pushes (0 at the start); a
            # later one tells a re-joining worker to pull the round before it whole first.
            self.port.send_control(wire.KIND_HELLO_ACK, pkt.addr, first_push,
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
        for (round_, pull), session in list(self.router.sessions.items()):
            if before is not None and round_ >= before:
                continue
            if not pull and isinstance(session, RecvSession):
                session.close_sender(rank, why)
            elif pull and isinstance(session, SendGroup):
                session.by_rank.pop(rank, None)
                if not session.by_rank:   # nobody left to pull this round
                    del self.router.sessions[(round_, pull)]

    def silent(self, now: float) -> list[int]:
        """Ranks silent past their absence timeout in an open push or pull."""
        quiet = set()
        for session in self.router.sessions.values():
            if isinstance(session, RecvSession):
                quiet |= set(session.silent(now))
            elif isinstance(session, SendGroup):
                quiet |= {r for r, snd in session.by_rank.items() if not snd.done
                          and now - snd.last_heard > snd.options.peer_timeout}
        return sorted(quiet)

    def on_silence(self, now: float) -> list[int]:
        """A session gave up on a silent peer (the router raised PeerTimeout): the rounds go
        on without every rank silent past its absence timeout, which are returned. None
        such (an empty list): the timeout was not a worker's absence, the driver raises it."""
        quiet = self.silent(now)
        for rank in quiet:
            if self.membership.mark_absent(rank, self.round):
                self.member_events.append({"rank": rank, "change": "absent", "round": self.round})
            self._leave_open_rounds(rank, "absent")
        return quiet

    def on_pull_req(self, pkt: Received, now: float) -> bool:
        """A worker that got nothing of a pull asks for it: resend what it lacks (if pulling)."""
        group = self.router.get(pkt.header.round, True)
        if group is None:
            self.counters["early_pull_req"] += 1
            return True
        if pkt.header.worker_rank in self.addrs:
            group.on_packet(pkt, now)
        return True

    # -- the round --------------------------------------------------------------------------
    def open_push(self, round_: int, required: tuple[float, ...]) -> RecvSession:
        """The receiver of ``round_``'s push (opened once; ``required``: per-layer fractions)."""
        session = self.router.get(round_, False)
        if session is None:
            self.push_deadline.settings = self.config.push_deadline   # the policy may switch it
            absent = self.config.join_timeout if round_ == 0 else self.config.peer_timeout
            session = recv_session(self.port, self.plan, round_, pull=False,
                                   senders=self.membership.pushers(round_), required=required,
                                   options=self.config.receive_options(
                                       self.push_deadline.current(), absent),
                                   sender_names=self.names, core=self.config.core)
            self.router.add(session)
        return session

    def begin_push(self, round_: int, required: tuple[float, ...]) -> None:
        """Gather ``round_``: a later step returns its `PushClosed`."""
        self.round = round_
        self.membership.next_pull = round_
        self.push = self.open_push(round_, required)

    def begin_pull(self, round_: int, layers: list[np.ndarray], last: bool,
                   next_required: tuple[float, ...] | None) -> None:
        """Scatter ``layers`` as ``round_``'s pull once at least --min-workers are present (a
        later step returns its `PullClosed`). ``next_required``, when known, opens the next
        round's push first (else `announce` does, later)."""
        self.round = round_
        self._pending = _PendingPull(round_, layers, last, next_required)
        self._wake = -INFINITY

    def announce(self, round_: int, required: tuple[float, ...], epoch: int) -> None:
        """The policy named ``round_``'s requirement and epoch: open its push and tell every
        worker of the current pull the epoch (KIND_EPOCH)."""
        self.open_push(round_, required)
        for rank in self._pullers:
            for _ in range(EPOCH_COPIES):
                self.port.send_control(wire.KIND_EPOCH, self.addrs[rank], round_, chunk_seq=epoch)

    def due(self, now: float) -> bool:
        """Whether a step has something to do now (a driver blocking on a socket asks)."""
        return (now >= self._wake or (self.push is not None and self.push.done)
                or (self.pull is not None and self.pull.done))

    def step(self, now: float) -> Step:
        """Close what closed; start a pull whose quorum is there; the final pull's grace."""
        out = Step()
        if self.push is not None and self.push.done:
            out.events.append(PushClosed(self.push.round, self._gathered(self.push, now), self.push))
            self.push = None
        if self._pending is not None:
            if self.membership.check_quorum(self._pending.round, now):
                self._start_pull(self._pending, now)
                self._pending = None
            else:
                self._wake = now + QUORUM_POLL
        if self.pull is not None:
            if self.pull.done or now >= self._wake:
                acknowledged = self.pull.done
                if not acknowledged:
                    self.counters["final_pull_unacknowledged"] += 1
                for rank, sender in self.pull.by_rank.items():
                    if sender.done:
                        self.membership.data_from(rank)
                out.events.append(PullClosed(self.pull.round, self.pull, acknowledged))
                self.pull, self._wake = None, INFINITY
        out.wake = self._wake
        return out

    def _gathered(self, session: RecvSession, now: float) -> Gathered:
        """What the push of ``session.round`` gave (and who it went on without)."""
        round_ = session.round
        self.router.prune(round_ - 1)
        lost = sorted({*(r for r, s in session.senders.items() if s.closed_by in LOST),
                       *self.membership.missing(round_)})
        for rank in lost:
            self.membership.contribution_lost(rank)
        kept = {r: s for r, s in session.senders.items() if r not in lost}
        for rank, state in kept.items():   # (a re-admitted rank's earlier data is not news)
            if state.first_data is not None:
                self.membership.data_from(rank)
        firsts = [s.first_data for s in session.senders.values() if s.first_data is not None]
        seconds = (session.finished or now) - min(firsts) if firsts else 0.0
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

    def _start_pull(self, p: _PendingPull, now: float) -> None:
        pullers = self._pullers = self.membership.pullers(p.round)
        self.membership.next_pull = p.round + 1
        if not p.last and p.next_required is not None:
            self.open_push(p.round + 1, p.next_required)
        cfg = self.config
        budget = LossBudget.of(cfg.bounds.pull, self.plan, cfg.bounds.scope)
        self.pull = SendGroup([
            SendSession(self.port, self.addrs[rank], rank, self.plan, p.layers, p.round,
                        pull=True, options=cfg.send, extra_flags=wire.FLAG_LAST if p.last else 0,
                        peer_name=self.names[rank],
                        critical_layers=cfg.bounds.critical_layers(pull=True),
                        budget=budget, window=self.pull_windows.get(rank), core=cfg.core)
            for rank in pullers], schedule=cfg.pull_schedule)
        self.router.add(self.pull)
        self._wake = now + LAST_PULL_GRACE if p.last else INFINITY
