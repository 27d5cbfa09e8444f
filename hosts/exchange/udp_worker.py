"""Worker side of the UDP exchange (ltp, mlt): push gradients, then receive the pull."""
from __future__ import annotations

import dataclasses
import time

import numpy as np

from hosts import wire
from hosts.errors import ConfigError, PacketError, PeerTimeout
from hosts.exchange.config import TransportConfig, fingerprint
from hosts.exchange.join import JoinClient
from hosts.exchange.results import Pulled
from hosts.pcn import PcnClient
from hosts.transport.bounds import LossBudget
from hosts.transport.chunking import ChunkPlan
from hosts.transport.deadline import Deadline
from hosts.transport.endpoint import Endpoint
from hosts.transport.mux import Mux
from hosts.transport.port import Received
from hosts.transport.receiver import ReceiveOptions, RecvSession
from hosts.transport.sender import SendSession, new_window

_LINGER = 0.3
_HELLO_EVERY = 0.1
PULL_REQ_EVERY_PROBES = 5     # a worker that got no pull asks again every this many probe intervals
_EPOCHS_KEPT = 8
# A worker waits for a silent PS twice as long as the PS waits for a silent worker: the PS
# decides who takes part, so a worker joins again only once the PS surely went on without it
# (joining again costs it the rounds until it has the model back).
PS_PATIENCE = 2.0


class UdpWorkerExchange:
    """One UDP endpoint toward the parameter server at `ps`."""

    def __init__(self, config: TransportConfig, plan: ChunkPlan, rank: int,
                 ps: tuple[str, int], bind: tuple[str, int]) -> None:
        self.config = config
        self.plan = plan
        self.rank = rank
        self.ps = ps
        self.endpoint = Endpoint(bind, config.job_id, rank, plain=config.plain, peer=ps,
                                 mac_key=config.mac_key,
                                 mac_mode=config.mac_mode)
        self.pull_deadline = Deadline(config.pull_deadline)
        self.counters = self.endpoint.counters
        self.mux = Mux(self.endpoint)
        self.pcn = (PcnClient(self.mux, ps, config.pcn_threshold, config.pcn_timeout)
                    if config.pcn else None)
        self._ps_name = f"parameter server {ps[0]}:{ps[1]}"
        self.fingerprint = fingerprint(plan.layer_sizes, plan.chunking_key(), config)
        self._join = JoinClient(config.job_key, config.job_id, rank, self.fingerprint)
        self.first_push = 0   # the PS's welcome: the first round we push
        self.push_window = new_window(config.send)   # kept over rounds, as TCP's connection is
        self.mux.handlers[wire.KIND_HELLO_ACK] = self._on_hello_ack
        self._announced: dict[int, int] = {}
        self.mux.handlers[wire.KIND_EPOCH] = self._on_epoch

    def _on_epoch(self, pkt: Received, now: float) -> bool:
        """The PS names the policy epoch of an upcoming round (docs/contracts.md, Job policy)."""
        self._announced[pkt.header.round] = pkt.header.chunk_seq
        for old in [r for r in self._announced if r < pkt.header.round - _EPOCHS_KEPT]:
            del self._announced[old]
        return True

    def announced_epoch(self, round_: int, wait: float) -> int | None:
        """The policy epoch the PS announced for `round_`, waiting up to `wait` s for it (the
        PS announces while it scatters the round before); None if it did not arrive."""
        if round_ not in self._announced and wait > 0:
            end = time.monotonic() + wait
            self.mux.run(lambda: round_ in self._announced or time.monotonic() >= end)
        return self._announced.get(round_)

    def _on_hello_ack(self, pkt: Received, now: float) -> bool:
        try:
            proof = self._join.on_ack(pkt.payload)
        except PacketError:
            self.counters["drop_hello_bad_mac"] += 1
            return True
        if self._join.joined:   # the welcome: its round is the first round we push
            self.first_push = pkt.header.round
        if proof is not None:
            self.endpoint.send_control(wire.KIND_HELLO, self.ps, 0, payload=proof)
        return True

    def join(self, timeout: float | None = None, forget_below: int = 0) -> int:
        """Join the PS with the job's key (hosts/exchange/join.py), resending until it answers
        (up to ``timeout``, default --join-timeout); the first round we push (0 at the start;
        later when the job runs already: see `catch_up`). Sessions of rounds below
        ``forget_below`` (given up on) are dropped first. ConfigError if its model or transport
        configuration differs from ours."""
        timeout = self.config.join_timeout if timeout is None else timeout
        give_up = time.monotonic() + timeout
        self.mux.prune(forget_below)
        self._join = JoinClient(self.config.job_key, self.config.job_id, self.rank,
                                self.fingerprint)   # a fresh nonce for every join
        while not self._join.joined:
            if time.monotonic() >= give_up:
                why = ("answered without proving the job's key: a different --job-key?"
                       if self._join.bad_answers else
                       "not started, unreachable, or not of the same --packet-mac")
                raise PeerTimeout(f"{self._ps_name} did not answer HELLO within "
                                  f"{timeout:.1f} s ({why})")
            self.endpoint.send_control(wire.KIND_HELLO, self.ps, 0,
                                       payload=self._join.next_hello())
            resend = time.monotonic() + _HELLO_EVERY
            self.mux.run(lambda: self._join.joined or time.monotonic() >= resend)
        if self._join.ps_fingerprint != self.fingerprint:
            raise ConfigError(f"{self._ps_name} runs a different configuration (model layer "
                              f"sizes, --chunk-elems or the push bounds that size the default "
                              f"chunks, --transport or --job differ)")
        return self.first_push

    def catch_up(self, round_: int) -> Pulled:
        """After joining a running job: receive the pull of ``round_`` whole (the current
        model), with no deadline."""
        self.mux.add(RecvSession(
            self.endpoint, self.plan, round_, pull=True, senders=[wire.PS_RANK],
            required=(1.0,) * self.plan.num_layers,
            options=ReceiveOptions(deadline=float("inf"),
                                   absent_timeout=PS_PATIENCE * self.config.peer_timeout,
                                   ack_delay=self.config.ack_delay),
            sender_names={wire.PS_RANK: self._ps_name}))
        return self.pull(round_)

    def push(self, round_: int, layers: list[np.ndarray]) -> dict:
        """Send this round's gradients until the PS says STOP; stats of the push."""
        cfg = self.config
        patience = PS_PATIENCE * cfg.peer_timeout
        absent = patience + (cfg.join_timeout if round_ == 0 else 0.0)
        self.pull_deadline.settings = cfg.pull_deadline   # the policy may switch the law
        self.mux.add(RecvSession(
            self.endpoint, self.plan, round_, pull=True, senders=[wire.PS_RANK],
            required=cfg.bounds.required_fraction(pull=True),
            options=ReceiveOptions(deadline=self.pull_deadline.current(), absent_timeout=absent,
                                   scope=cfg.bounds.scope, ack_delay=cfg.ack_delay),
            sender_names={wire.PS_RANK: self._ps_name}))
        stats: dict = {}
        if self.pcn is not None:
            stats["pcn_rtt_ms"] = self.pcn.handshake(round_)
        options = dataclasses.replace(cfg.send, peer_timeout=cfg.join_timeout if round_ == 0 else patience)
        sender = SendSession(self.endpoint, self.ps, wire.PS_RANK, self.plan, layers, round_,
                             pull=False, options=options, peer_name=self._ps_name,
                             critical_layers=cfg.bounds.critical_layers(pull=False),
                             budget=LossBudget.of(cfg.bounds.push, self.plan, cfg.bounds.scope),
                             window=self.push_window)
        self.mux.add(sender)
        self.mux.run(lambda: sender.done)
        stats.update(push_s=sender.stats.seconds, retransmissions=sender.stats.retransmissions,
                     data_packets=sender.stats.data_packets, closed_by=sender.stats.closed_by,
                     **sender.window_summary())
        return stats

    def pull(self, round_: int) -> Pulled:
        """Receive this round's parameters until the pull bound or deadline is met."""
        session = self.mux.get(round_, True)
        state = session.senders[wire.PS_RANK]
        t0 = time.monotonic()
        every = self.config.send.probe_interval * PULL_REQ_EVERY_PROBES
        while not session.done:
            wait_until = time.monotonic() + every
            self.mux.run(lambda: session.done or time.monotonic() >= wait_until)
            if not session.done and state.first_data is None:
                self.endpoint.send_control(wire.KIND_PULL_REQ, self.ps, round_, wire.FLAG_PULL)
        self.mux.drain()
        self.mux.prune(round_)
        buf = state.buffer
        adaptation = None
        if state.first_data is not None and state.closed_at is not None:
            adaptation = self.pull_deadline.observe(state.closed_at - state.first_data,
                                                    session.telemetry, round_)
        end = time.monotonic()
        first = state.first_data if state.first_data is not None else end
        return Pulled(values=buf.values, delivered=buf.delivered, fractions=buf.fractions(),
                      closed_by=state.closed_by, last=bool(state.flags_seen & wire.FLAG_LAST),
                      seconds=end - t0, wait=max(min(first, end) - t0, 0.0),
                      deadline=session.options.deadline,
                      telemetry=session.telemetry.as_dict(),
                      adaptation=None if adaptation is None else adaptation.as_dict())

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
