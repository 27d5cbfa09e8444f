"""DDL push bursts for the PCN experiment: a worker sends a fixed number of bytes to the PS at
fixed times, over a reliable ECN-reactive transport, and times each burst until every byte is
acknowledged.

Two transports:
- ``tcp``: one kernel TCP connection per worker, kept for all bursts (as a parameter server's
  connection is); the congestion control is the socket's (`TCP_CONGESTION`), ECN is asked for in
  the worker's network namespace (net.ipv4.tcp_ecn=1). A burst is complete when the socket's
  send queue is empty (SIOCOUTQ 0: every byte sent and acknowledged).
- ``gradlane``: gradlane's UDP sender (hosts/transport) with its congestion window, one tensor
  of the burst's bytes per round, every chunk CRITICAL (ECN-capable, never dropped by a bound);
  complete when the PS's receiver has every chunk and says STOP ("complete").

The PS side: :class:`BurstReceivers` opens a receiver session per round for the gradlane
transport; :func:`tcp_sink` drains the TCP connections.
"""
from __future__ import annotations

import fcntl
import socket
import struct
import termios
import threading
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from hosts import wire
from hosts.background import listen_tcp, serve_sink
from hosts.errors import ConfigError, PeerTimeout
from hosts.jsonlog import JsonLog
from hosts.transport.chunking import ChunkPlan
from hosts.transport.congestion import RULES as CC_RULES
from hosts.transport.endpoint import Received
from hosts.transport.mux import Mux
from hosts.transport.receiver import ReceiveOptions, RecvSession
from hosts.transport.sender import SendOptions, SendSession

TRANSPORTS = ("tcp", "gradlane")
CHUNK_ELEMS = wire.MAX_DATA_PAYLOAD // 4
_TCP_WRITE = 64 * 1024
_ACK_POLL_S = 0.0005
# A receiver never closes a burst early: it is reliable (every chunk), so no deadline applies
# within a run; it also never gives up on a rank that has not sent yet.
_NEVER_S = 24 * 3600.0


@dataclass(frozen=True)
class BurstTransport:
    """How a worker's bursts travel: `kind` tcp or gradlane; for tcp the kernel's congestion
    control; for gradlane the sender's initial window, rule and delay target."""

    kind: str = "tcp"
    tcp_cc: str = "cubic"
    window: int = 10
    cc: str = "ecn"
    delay_target_ms: float = 20.0

    def check(self) -> None:
        """ConfigError naming the option that is wrong."""
        if self.kind not in TRANSPORTS:
            raise ConfigError(f"--transport {self.kind!r} is not one of {', '.join(TRANSPORTS)}")
        if self.cc not in CC_RULES:
            raise ConfigError(f"--cc {self.cc!r} is not one of {', '.join(CC_RULES)}")
        if self.window < 1:
            raise ConfigError("--window must be at least 1 packet")
        if not 0 <= self.delay_target_ms < float("inf"):
            raise ConfigError("--cc-delay-ms must be a finite number >= 0")


def burst_plan(nbytes: int) -> ChunkPlan:
    """The one-layer tensor of a gradlane-transport burst of `nbytes` (rounded up to 4 bytes)."""
    return ChunkPlan([max(1, -(-nbytes // 4))], CHUNK_ELEMS)


def unacked_bytes(sock: socket.socket) -> int:
    """Bytes of a TCP socket not yet acknowledged by the peer (sent or not): SIOCOUTQ."""
    out = fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, struct.pack("i", 0))
    return struct.unpack("i", out)[0]


class TcpBurstSender:
    """Bursts over one kept TCP connection; `send` returns when every byte is acknowledged."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._block = b"\0" * _TCP_WRITE
        self._retrans = _tcp_total_retrans(sock) or 0

    def send(self, nbytes: int, timeout: float) -> dict:
        """Send `nbytes`; PeerTimeout if they are not all acknowledged within `timeout` s."""
        give_up = time.monotonic() + timeout
        self.sock.settimeout(timeout)
        left = nbytes
        try:
            while left > 0:
                left -= self.sock.send(self._block[:min(left, _TCP_WRITE)])
        except OSError as exc:
            raise PeerTimeout(f"TCP burst: {exc.strerror or exc}") from None
        while unacked_bytes(self.sock) > 0:
            if time.monotonic() > give_up:
                raise PeerTimeout(f"TCP burst: not acknowledged within {timeout:g} s")
            time.sleep(_ACK_POLL_S)
        total = _tcp_total_retrans(self.sock)
        if total is None:
            return {"retransmissions": None}
        burst, self._retrans = total - self._retrans, total
        return {"retransmissions": burst}   # this burst's segments sent again


def _tcp_total_retrans(sock: socket.socket) -> int | None:
    """tcpi_total_retrans of the connection so far (Linux struct tcp_info), None if unreadable."""
    try:
        info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104)
    except OSError:
        return None
    return struct.unpack_from("I", info, 100)[0] if len(info) >= 104 else None


class GradlaneBurstSender:
    """Bursts over gradlane's UDP sender; `send` returns when the PS said STOP (all arrived)."""

    def __init__(self, mux: Mux, ps: tuple[str, int], transport: BurstTransport) -> None:
        self.mux = mux
        self.ps = ps
        self.options = SendOptions(window=transport.window, cc=transport.cc,
                                   delay_target_us=int(transport.delay_target_ms * 1000))

    def send(self, nbytes: int, round_: int, timeout: float) -> dict:
        plan = burst_plan(nbytes)
        session = SendSession(self.mux.endpoint, self.ps, wire.PS_RANK, plan,
                              [np.zeros(plan.layer_sizes[0], dtype=np.float32)], round_,
                              pull=False, options=self.options, peer_name="PS",
                              critical_layers=frozenset({0}))
        self.mux.add(session)
        try:
            self.mux.run(lambda: session.done, timeout,
                         f"gradlane burst of round {round_} not complete within {timeout:g} s")
        finally:
            self.mux.prune(round_ + 1)
        return {"retransmissions": session.stats.retransmissions,
                "data_packets": session.stats.data_packets, "closed_by": session.stats.closed_by,
                **session.window_summary()}


class BurstReceivers:
    """PS side of gradlane-transport bursts: the first DATA of a new round opens a receiver
    session expecting every rank of `ranks` (bursts of `nbytes` each); a round closes per
    sender when all its chunks are in. A newer round prunes the older ones that are done (a
    slow worker may still be sending the previous round when a fast one starts the next)."""

    def __init__(self, mux: Mux, nbytes: int, ranks: list[int]) -> None:
        self.mux = mux
        self.plan = burst_plan(nbytes)
        self.ranks = ranks
        self.options = ReceiveOptions(deadline=_NEVER_S, absent_timeout=_NEVER_S)
        self._newest = 0

    def on_data(self, pkt: Received, now: float) -> None:
        """Open the round's session if `pkt` is the first DATA of a newer round."""
        round_ = pkt.header.round
        if round_ <= self._newest or pkt.header.flags & wire.FLAG_PULL:
            return
        self._newest = round_
        open_rounds = [r for (r, _), session in self.mux.sessions.items() if session.active]
        self.mux.prune(min(open_rounds, default=round_))
        self.mux.add(RecvSession(self.mux.endpoint, self.plan, round_, pull=False,
                                 senders=self.ranks, required=(1.0,), options=self.options))


def tcp_sink(bind: tuple[str, int], log: JsonLog, stop: threading.Event) -> threading.Thread:
    """Accept DDL TCP connections on `bind` and discard their bytes, in a thread until `stop`
    (hosts.background's sink: logs each connection's bytes). ConfigError now if the port
    cannot be bound."""
    thread = threading.Thread(target=serve_sink, args=(listen_tcp(bind), log, stop), daemon=True)
    thread.start()
    return thread


def run_bursts(send: Callable[[int], dict], handshake: Callable[[int], float | None] | None,
               log: JsonLog, rank: int, bursts: int, nbytes: int, period: float, lead: float,
               start_at: float, first_round: int = 1) -> None:
    """Burst i is ready at `start_at` + i x `period` (unix time); with `handshake`, PCN-START
    goes out `lead` s before and the burst leaves once ready (and ACKed, or the handshake gave
    up). `send(round)` moves the burst's bytes and returns when all are acknowledged. A burst
    still running at the next one's ready time delays it (logged as `late_s`)."""
    for i in range(bursts):
        round_ = first_round + i
        ready = start_at + i * period
        _sleep_until(ready - lead)
        rtt = handshake(round_) if handshake is not None else None
        _sleep_until(ready)
        t0 = time.time()
        extra = send(round_)
        done = time.time()
        log.write("burst_sent", round=round_, rank=rank, bytes=nbytes, ready_t=ready, first_t=t0,
                  done_t=done, completion_s=done - ready, late_s=max(0.0, t0 - ready),
                  pcn=handshake is not None, acked=rtt is not None, pcn_rtt_ms=rtt, **extra)


def _sleep_until(when: float) -> None:
    delay = when - time.time()
    if delay > 0:
        time.sleep(delay)
