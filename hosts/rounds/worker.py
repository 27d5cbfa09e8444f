"""A worker's rounds as a socket-free state machine.

`begin_join` proves the job's key to the PS (hosts/exchange/join.py), resending HELLO until
it answers: a step returns `Joined` with the first round to push. `begin` opens a round: the
receiver of its pull first, then the push of the gradients; a step returns `PushClosed` once
the PS said STOP, then asks with PULL_REQ every PULL_REQ_EVERY_PROBES probe intervals while
no pull DATA came, and returns `PullClosed` once the pull met its bound or deadline (the round
is over then, even if the push's STOP was lost). `catch_up` receives one pull whole (the
current model, after joining a running job). The PS's policy epochs (KIND_EPOCH) are kept in
`announced`.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from hosts import wire
from hosts.errors import ConfigError, PacketError, PeerTimeout
from hosts.exchange.config import TransportConfig
from hosts.exchange.join import JoinClient
from hosts.rounds.cadence import EPOCHS_KEPT, HELLO_EVERY, PULL_REQ_EVERY_PROBES, ps_patience
from hosts.rounds.step import INFINITY, Step
from hosts.transport.bounds import LossBudget
from hosts.transport.chunking import ChunkPlan
from hosts.transport.deadline import Adaptation, Deadline
from hosts.transport.port import Received
from hosts.transport.core import recv_session
from hosts.transport.receiver import RecvSession, SenderState
from hosts.transport.router import Router
from hosts.transport.sender import SendSession, new_window


@dataclass
class Joined:
    """The PS welcomed us: `first_push` is the first round we push (0 at the start)."""

    first_push: int


@dataclass
class PushClosed:
    """The PS said STOP to our push of `round`."""

    round: int
    sender: SendSession


@dataclass
class PullClosed:
    """The pull of `round` closed at `at` (bound or deadline); `adaptation`: the pull
    deadline's change for the next round, if any."""

    round: int
    session: RecvSession
    state: SenderState
    adaptation: Adaptation | None
    at: float


class WorkerRounds:
    """One worker's round protocol toward the PS at `ps`, over one router (see the module
    docstring). `fingerprint`: our configuration's, which the PS must share (join).
    `pace_pps` > 0 paces the pushes at that rate instead of --pace's."""

    def __init__(self, router: Router, config: TransportConfig, plan: ChunkPlan, rank: int,
                 ps: tuple[str, int], fingerprint: int = 0, pace_pps: float = 0.0) -> None:
        self.router = router
        self.port = router.endpoint
        self.counters = self.port.counters
        self.config = config
        self.plan = plan
        self.rank = rank
        self.ps = ps
        self.ps_name = f"parameter server {ps[0]}:{ps[1]}"
        self.fingerprint = fingerprint
        self.pace_pps = pace_pps
        self.pull_deadline = Deadline(config.pull_deadline)
        self.push_window = new_window(config.send)   # kept over rounds, as TCP's connection is
        self.round = -1
        self.sender: SendSession | None = None
        self.pull: RecvSession | None = None
        self.pull_req_at = INFINITY
        self.announced: dict[int, int] = {}     # round -> policy epoch the PS announced
        self.first_push = 0                     # the PS's welcome: the first round we push
        self._join = JoinClient(config.job_key, config.job_id, rank, fingerprint)
        self._joining = False
        self._hello_at = INFINITY
        self._give_up = INFINITY
        self._join_timeout = 0.0
        router.handlers[wire.KIND_HELLO_ACK] = self.on_hello_ack
        router.handlers[wire.KIND_EPOCH] = self.on_epoch

    # -- joining ----------------------------------------------------------------------------
    def begin_join(self, now: float, timeout: float, forget_below: int = 0) -> None:
        """Join the PS (a fresh nonce), giving up after ``timeout`` s; sessions of rounds below
        ``forget_below`` (given up on) are dropped first, and so is the round under way."""
        self.router.prune(forget_below)
        self.sender, self.pull, self.pull_req_at = None, None, INFINITY
        self._join = JoinClient(self.config.job_key, self.config.job_id, self.rank,
                                self.fingerprint)
        self._joining = True
        self._hello_at, self._give_up, self._join_timeout = now, now + timeout, timeout

    def on_hello_ack(self, pkt: Received, now: float) -> bool:
        """A step of the handshake from the PS: send the proof after a valid challenge."""
        try:
            proof = self._join.on_ack(pkt.payload)
        except PacketError:
            self.counters["drop_hello_bad_mac"] += 1
            return True
        if self._join.joined:   # the welcome: its round is the first round we push
            self.first_push = pkt.header.round
        if proof is not None:
            self.port.send_control(wire.KIND_HELLO, self.ps, 0, payload=proof)
        return True

    def _step_join(self, now: float, out: Step) -> None:
        """`Joined` once welcomed; PeerTimeout past the timeout; else HELLO when its time came.
        ConfigError if the PS's configuration differs from ours."""
        if self._join.joined:
            if self._join.ps_fingerprint != self.fingerprint:
                raise ConfigError(f"{self.ps_name} runs a different configuration (model layer "
                                  f"sizes, --chunk-elems or the push bounds that size the default "
                                  f"chunks, --transport or --job differ)")
            self._joining, self._hello_at = False, INFINITY
            out.events.append(Joined(self.first_push))
            return
        if now >= self._give_up:
            why = ("answered without proving the job's key: a different --job-key?"
                   if self._join.bad_answers else
                   "not started, unreachable, or not of the same --packet-mac")
            raise PeerTimeout(f"{self.ps_name} did not answer HELLO within "
                              f"{self._join_timeout:.1f} s ({why})")
        if now >= self._hello_at:
            self.port.send_control(wire.KIND_HELLO, self.ps, 0, payload=self._join.next_hello())
            self._hello_at = now + HELLO_EVERY

    # -- epochs -----------------------------------------------------------------------------
    def on_epoch(self, pkt: Received, now: float) -> bool:
        """The PS names the policy epoch of an upcoming round (docs/contracts.md, Job policy)."""
        self.announced[pkt.header.round] = pkt.header.chunk_seq
        for old in [r for r in self.announced if r < pkt.header.round - EPOCHS_KEPT]:
            del self.announced[old]
        return True

    # -- the round --------------------------------------------------------------------------
    def _pull_every(self) -> float:
        return self.config.send.probe_interval * PULL_REQ_EVERY_PROBES

    def begin(self, round_: int, layers: list[np.ndarray]) -> None:
        """Open ``round_``: the receiver of its pull, then the push of ``layers``."""
        cfg = self.config
        patience = ps_patience(cfg.peer_timeout)
        absent = patience + (cfg.join_timeout if round_ == 0 else 0.0)
        self.pull_deadline.settings = cfg.pull_deadline   # the policy may switch the law
        self.round = round_
        self.pull = recv_session(
            self.port, self.plan, round_, pull=True, senders=[wire.PS_RANK],
            required=cfg.bounds.required_fraction(pull=True),
            options=cfg.receive_options(self.pull_deadline.current(), absent),
            sender_names={wire.PS_RANK: self.ps_name}, core=cfg.core)
        self.router.add(self.pull)
        options = dataclasses.replace(cfg.send,
                                      peer_timeout=cfg.join_timeout if round_ == 0 else patience,
                                      pace_pps=self.pace_pps or cfg.send.pace_pps)
        self.sender = SendSession(self.port, self.ps, wire.PS_RANK, self.plan, layers, round_,
                                  pull=False, options=options, peer_name=self.ps_name,
                                  critical_layers=cfg.bounds.critical_layers(pull=False),
                                  budget=LossBudget.of(cfg.bounds.push, self.plan, cfg.bounds.scope),
                                  window=self.push_window, core=cfg.core)
        self.router.add(self.sender)
        self.pull_req_at = INFINITY

    def catch_up(self, round_: int, now: float) -> None:
        """After joining a running job: receive the pull of ``round_`` whole (the current
        model), with no deadline; PULL_REQ from now on while nothing came."""
        self.round = round_
        self.sender = None
        self.pull = recv_session(
            self.port, self.plan, round_, pull=True, senders=[wire.PS_RANK],
            required=(1.0,) * self.plan.num_layers,
            options=self.config.receive_options(INFINITY, ps_patience(self.config.peer_timeout),
                                                scope="layer"),
            sender_names={wire.PS_RANK: self.ps_name}, core=self.config.core)
        self.router.add(self.pull)
        self.pull_req_at = now + self._pull_every()

    def due(self, now: float) -> bool:
        """Whether a step has something to do now (a driver blocking on a socket asks)."""
        return (now >= min(self.pull_req_at, self._hello_at)
                or (self._joining and self._join.joined)
                or (self.sender is not None and self.sender.done and self.pull_req_at == INFINITY)
                or (self.pull is not None and self.pull.done))

    def step(self, now: float) -> Step:
        """Join; close the push (then start asking for the pull) and the pull; PULL_REQ."""
        out = Step()
        if self._joining:
            self._step_join(now, out)
        if self.sender is not None and self.sender.done and self.pull_req_at == INFINITY:
            out.events.append(PushClosed(self.round, self.sender))
            self.pull_req_at = now + self._pull_every()
        if self.pull is not None and self.pull.done:
            state = self.pull.senders[wire.PS_RANK]
            adaptation = None
            if state.first_data is not None and state.closed_at is not None:
                adaptation = self.pull_deadline.observe(state.closed_at - state.first_data,
                                                        self.pull.telemetry, self.round)
            self.router.prune(self.round)
            out.events.append(PullClosed(self.round, self.pull, state, adaptation, now))
            self.sender, self.pull, self.pull_req_at = None, None, INFINITY
        elif self.pull is not None and now >= self.pull_req_at:
            if self.pull.senders[wire.PS_RANK].first_data is None:
                self.port.send_control(wire.KIND_PULL_REQ, self.ps, self.round, wire.FLAG_PULL)
            self.pull_req_at = now + self._pull_every()
        out.wake = min(self.pull_req_at, self._hello_at)
        return out
