"""Worker side of the UDP exchange (ltp, mlt): push gradients, then receive the pull."""
from __future__ import annotations

import dataclasses
import time

import numpy as np

from hosts import wire
from hosts.errors import ConfigError, PacketError, PeerTimeout
from hosts.exchange.config import TransportConfig, fingerprint
from hosts.exchange.results import Pulled
from hosts.pcn import PcnClient
from hosts.transport.bounds import loss_budget_chunks
from hosts.transport.chunking import ChunkPlan
from hosts.transport.deadline import Deadline
from hosts.transport.endpoint import Endpoint, Received
from hosts.transport.mux import Mux
from hosts.transport.receiver import ReceiveOptions, RecvSession
from hosts.transport.sender import SendSession

_LINGER = 0.3
_HELLO_EVERY = 0.1
_PULL_REQ_EVERY_PROBES = 5
_EPOCHS_KEPT = 8


class UdpWorkerExchange:
    """One UDP endpoint toward the parameter server at `ps`."""

    def __init__(self, config: TransportConfig, plan: ChunkPlan, rank: int,
                 ps: tuple[str, int], bind: tuple[str, int]) -> None:
        self.config = config
        self.plan = plan
        self.rank = rank
        self.ps = ps
        self.endpoint = Endpoint(bind, config.job_id, rank, plain=config.plain, peer=ps)
        self.pull_deadline = Deadline(config.pull_deadline)
        self.counters = self.endpoint.counters
        self.mux = Mux(self.endpoint)
        self.pcn = (PcnClient(self.mux, ps, config.pcn_threshold, config.pcn_timeout)
                    if config.pcn else None)
        self._ps_name = f"parameter server {ps[0]}:{ps[1]}"
        self.fingerprint = fingerprint(plan.layer_sizes, plan.chunk_elems, config)
        self._ps_fingerprint: int | None = None
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
            self._ps_fingerprint = wire.unpack_hello(pkt.payload)
        except PacketError:
            self.counters["drop_corrupt"] += 1
        return True

    def join(self) -> None:
        """HELLO the PS until it answers (up to --join-timeout); ConfigError if its model or
        transport configuration differs from ours."""
        give_up = time.monotonic() + self.config.join_timeout
        while self._ps_fingerprint is None:
            if time.monotonic() >= give_up:
                raise PeerTimeout(f"{self._ps_name} did not answer HELLO within "
                                  f"{self.config.join_timeout:.1f} s (not started or unreachable)")
            self.endpoint.send_control(wire.KIND_HELLO, self.ps, 0,
                                       payload=wire.HELLO.pack(self.fingerprint))
            resend = time.monotonic() + _HELLO_EVERY
            self.mux.run(lambda: self._ps_fingerprint is not None or time.monotonic() >= resend)
        if self._ps_fingerprint != self.fingerprint:
            raise ConfigError(f"{self._ps_name} runs a different configuration (model layer "
                              f"sizes, --chunk-elems, --transport or --job differ)")

    def push(self, round_: int, layers: list[np.ndarray]) -> dict:
        """Send this round's gradients until the PS says STOP; stats of the push."""
        cfg = self.config
        absent = cfg.peer_timeout + (cfg.join_timeout if round_ == 0 else 0.0)
        self.pull_deadline.settings = cfg.pull_deadline   # the policy may switch the law
        self.mux.add(RecvSession(
            self.endpoint, self.plan, round_, pull=True, senders=[wire.PS_RANK],
            required=cfg.bounds.required_fraction(pull=True),
            options=ReceiveOptions(deadline=self.pull_deadline.current(), absent_timeout=absent,
                                   scope=cfg.bounds.scope),
            sender_names={wire.PS_RANK: self._ps_name}))
        stats: dict = {}
        if self.pcn is not None:
            stats["pcn_rtt_ms"] = self.pcn.handshake(round_)
        options = cfg.send
        if round_ == 0:
            options = dataclasses.replace(options, peer_timeout=cfg.join_timeout)
        sender = SendSession(self.endpoint, self.ps, wire.PS_RANK, self.plan, layers, round_,
                             pull=False, options=options, peer_name=self._ps_name,
                             critical_layers=cfg.bounds.critical_layers(pull=False),
                             loss_budget=loss_budget_chunks(cfg.bounds.push, self.plan,
                                                            cfg.bounds.scope))
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
        every = self.config.send.probe_interval * _PULL_REQ_EVERY_PROBES
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
