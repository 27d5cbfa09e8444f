"""The reliable baseline: the same PS/worker exchange over TCP (one connection per worker).

Frames are the gradient header + payload, exactly as on UDP; a worker opens with the join
handshake of hosts/exchange/join.py (HELLO / HELLO_ACK frames proving the job's key). A broken
connection is a fault as on UDP: the PS goes on without the worker and re-admits it when it
connects and joins again; the worker connects again within --outage-horizon (docs/faults.md).
"""
from __future__ import annotations

import select
import socket
import struct
import time
from collections import deque

import numpy as np

from hosts import wire
from hosts.errors import ConfigError, PacketError, PeerTimeout
from hosts.exchange import tcp_options
from hosts.exchange.config import TransportConfig, fingerprint
from hosts.exchange.join import JoinClient, JoinServer
from hosts.exchange.membership import Membership
from hosts.exchange.results import Gathered, Pulled
from hosts.rounds.cadence import QUORUM_POLL, ps_patience
from hosts.transport.chunking import ChunkPlan
from hosts.transport.counters import Counters
from hosts.transport.reassembly import TensorBuffer

_CONNECT_RETRY = 0.1
_HANDSHAKE_TIMEOUT = 2.0    # a connection silent in the join must not hold the others up long
JOIN_ATTEMPTS = 3           # handshakes a worker tries (a new connection each) before giving up


class ConnectionClosed(PeerTimeout):
    """The peer closed or reset the connection (as opposed to falling silent)."""


class _HandshakeAbandoned(PeerTimeout):
    """The PS closed the connection during the join (worth another try on a new one)."""


def _tcp_retransmissions(sock: socket.socket) -> int:
    """tcpi_total_retrans from TCP_INFO (Linux), 0 if unavailable."""
    try:
        info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104)
        return struct.unpack_from("I", info, 100)[0] if len(info) >= 104 else 0
    except OSError:
        return 0


class FrameStream:
    """Reads and writes gradient frames on one TCP connection with a silence timeout."""

    def __init__(self, sock: socket.socket, peer_name: str, timeout: float,
                 counters: Counters) -> None:
        self.sock = sock
        self.peer_name = peer_name
        self.timeout = timeout
        self.counters = counters
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.settimeout(timeout)

    def read_exact(self, n: int) -> bytes:
        out = bytearray(n)
        view = memoryview(out)
        got = 0
        while got < n:
            try:
                part = self.sock.recv_into(view[got:], n - got)
            except socket.timeout:
                raise PeerTimeout(f"{self.peer_name} sent nothing for {self.timeout:.1f} s "
                                  f"(dead or unreachable)") from None
            except OSError as exc:
                raise ConnectionClosed(f"{self.peer_name}: connection failed ({exc.strerror})") from None
            if not part:
                raise ConnectionClosed(f"{self.peer_name} closed the connection")
            got += part
        self.counters["bytes_received"] += n
        return bytes(out)

    def read_frame(self) -> tuple[wire.Header, bytes]:
        head = self.read_exact(wire.HEADER_LEN)
        plen = int.from_bytes(head[14:16], "big")
        body = self.read_exact(plen) if plen else b""
        return wire.unpack_header(head + body), body

    def write(self, data: bytes) -> None:
        try:
            self.sock.sendall(data)
        except socket.timeout:
            raise PeerTimeout(f"{self.peer_name} stopped reading for {self.timeout:.1f} s") from None
        except OSError as exc:
            raise ConnectionClosed(f"{self.peer_name}: connection failed ({exc.strerror})") from None
        self.counters["bytes_sent"] += len(data)

    def retransmissions(self) -> int:
        return _tcp_retransmissions(self.sock)


def encode_layers(plan: ChunkPlan, layers: list[np.ndarray], job: int, rank: int, round_: int,
                  flags: int) -> bytes:
    """Every chunk of `layers` as consecutive frames."""
    parts = []
    for chunk in plan.split(layers):
        payload = chunk.values.astype(">f4").tobytes()
        parts.append(wire.pack_header(wire.KIND_DATA, flags, job, rank, chunk.layer, round_,
                                      chunk.mag_class, len(payload), chunk.seq, chunk.offset))
        parts.append(payload)
    return b"".join(parts)


def round_bytes(plan: ChunkPlan) -> int:
    """The length of one round of `plan` on the stream (every chunk's frame)."""
    return plan.total_chunks * wire.HEADER_LEN + 4 * sum(plan.layer_sizes)


def read_layers(stream: FrameStream, plan: ChunkPlan, job: int, rank: int,
                round_: int) -> tuple[TensorBuffer, int]:
    """Read one round (every chunk of `rank`'s layers, one read) into a buffer; (buffer, flags)."""
    return parse_layers(stream.read_exact(round_bytes(plan)), stream.peer_name, plan, job, rank,
                        round_)


def parse_layers(raw: bytes, peer_name: str, plan: ChunkPlan, job: int, rank: int,
                 round_: int) -> tuple[TensorBuffer, int]:
    """One round's frames of `rank` (as read) into a buffer; (buffer, flags)."""
    size = len(raw)
    data = memoryview(raw)
    buf = TensorBuffer(plan)
    flags = 0
    pos = 0
    try:
        while pos < size:
            plen = int.from_bytes(data[pos + 14:pos + 16], "big")
            end = pos + wire.HEADER_LEN + plen
            hdr = wire.unpack_header(data[pos:end])
            if hdr.job_id != job or hdr.worker_rank != rank or hdr.round != round_ \
                    or hdr.kind != wire.KIND_DATA:
                raise PacketError("corrupt", f"unexpected frame {hdr}")
            buf.place(hdr.layer_id, hdr.chunk_seq, hdr.elem_offset, data[pos + wire.HEADER_LEN:end])
            flags |= hdr.flags
            pos = end
        if not buf.complete():
            raise PacketError("corrupt", "round incomplete (duplicate frames)")
    except PacketError as exc:
        # A reliable byte stream out of sync cannot recover: the peer is broken.
        raise PeerTimeout(f"{peer_name} sent a bad frame ({exc})") from None
    return buf, flags


def read_rounds(streams: dict[int, FrameStream], size: int,
                timeout: float) -> tuple[dict[int, bytes], dict[int, str]]:
    """Read `size` bytes from every stream at once; (what each rank sent, why each rank that
    did not failed: its connection broke, or it sent nothing for `timeout` s)."""
    bufs = {r: bytearray(size) for r in streams}
    got = dict.fromkeys(streams, 0)
    heard = dict.fromkeys(streams, time.monotonic())
    failed: dict[int, str] = {}
    pending = {s.sock: r for r, s in streams.items()}
    while pending:
        now = time.monotonic()
        for sock, rank in list(pending.items()):
            if now - heard[rank] > timeout:
                failed[rank] = f"{streams[rank].peer_name} sent nothing for {timeout:.1f} s"
                del pending[sock]
        if not pending:
            break
        wait = min(heard[r] for r in pending.values()) + timeout - now
        for sock in select.select(list(pending), [], [], max(wait, 0.0))[0]:
            rank = pending[sock]
            try:
                n = sock.recv_into(memoryview(bufs[rank])[got[rank]:], size - got[rank],
                                   socket.MSG_DONTWAIT)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError as exc:
                failed[rank] = f"{streams[rank].peer_name}: connection failed ({exc.strerror})"
                del pending[sock]
                continue
            if not n:
                failed[rank] = f"{streams[rank].peer_name} closed the connection"
                del pending[sock]
                continue
            got[rank] += n
            heard[rank] = time.monotonic()
            streams[rank].counters["bytes_received"] += n
            if got[rank] == size:
                del pending[sock]
    return {r: bytes(b) for r, b in bufs.items() if r not in failed}, failed


class TcpServerExchange:
    """PS side: one connection per worker rank, then reliable gather/scatter.

    As on UDP (hosts/exchange/membership.py), a worker whose connection breaks (it died, or its
    connection was reset) or stays silent for --peer-timeout is left behind: the round goes on
    without its push, counted lost. A worker that connects again and proves the job's key is
    re-admitted at a round boundary: it receives the next pull whole, then pushes again.
    """

    def __init__(self, config: TransportConfig, plan: ChunkPlan, workers: int,
                 bind: tuple[str, int]) -> None:
        self.config = config
        self.plan = plan
        self.workers = workers
        self.counters = Counters()
        self.ecn_setup = tcp_options.check_ecn(config.tcp_ecn)
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            tcp_options.tune(self.listener, config.tcp_cc)
            self.listener.bind(bind)
        except OSError as exc:
            self.listener.close()
            raise ConfigError(f"cannot bind TCP {bind[0]}:{bind[1]}: {exc.strerror}") from None
        self.listener.listen(workers + 4)
        self.streams: dict[int, FrameStream] = {}
        self.fingerprint = fingerprint(plan.layer_sizes, plan.chunking_key(), config)
        self.join = JoinServer(config.job_key, config.job_id, workers, self.fingerprint,
                               self.counters)
        self.membership = Membership(workers)   # the PS sets its flags' limits
        self.member_events: list[dict] = []     # absences and re-admissions, for the PS's log
        self.addrs: dict[int, tuple[str, int]] = {}
        self.refused: deque[str] = deque(maxlen=3)   # why the last joins on new connections failed
        self._started = False

    def _handshake(self, stream: FrameStream, addr: tuple[str, int]) -> int | None:
        """The join on a new connection: the rank it proved with our configuration, or None.
        The welcome's header round is the first round the worker pushes (as on UDP)."""
        frame = stream.read_frame()
        rank = frame[0].worker_rank
        for _ in range(2):      # step 1 (challenge), then step 3 (welcome)
            hdr, payload = frame
            if hdr.kind != wire.KIND_HELLO or hdr.job_id != self.config.job_id \
                    or hdr.worker_rank != rank:
                self.counters["drop_bad_hello"] += 1
                return None
            answer = self.join.on_hello(rank, addr, payload)
            if answer.reply is None or (answer.proven and not answer.fresh):
                return None
            admitted = answer.proven and answer.fingerprint == self.fingerprint
            first_push = self._admit(rank, addr) if admitted else 0
            stream.write(wire.pack_header(wire.KIND_HELLO_ACK, 0, self.config.job_id,
                                          wire.PS_RANK, wire.ALL_LAYERS, first_push,
                                          payload_len=len(answer.reply)) + answer.reply)
            if answer.proven:
                if not admitted:
                    self.counters["hello_config_mismatch"] += 1
                    return None
                return rank
            frame = stream.read_frame()
        return None

    def _admit(self, rank: int, addr: tuple[str, int]) -> int:
        """``rank`` proved the key on a new connection: the first round it pushes. A rank that
        still had a connection restarted (or lost it unnoticed): that one is closed."""
        old = self.streams.pop(rank, None)
        if old is not None:
            old.sock.close()
            was = self.addrs[rank]
            self.counters["hello_rebind"] += 1
            self.member_events.append({"rank": rank, "change": "rebound",
                                       "from": f"{was[0]}:{was[1]}", "to": f"{addr[0]}:{addr[1]}"})
        self.addrs[rank] = addr
        first_push, again = self.membership.hello(rank, restarted=old is not None)
        if again:
            self.member_events.append({"rank": rank, "change": "rejoined",
                                       "first_push": first_push, "pulls_whole": first_push - 1})
        return first_push

    def _accept_one(self) -> None:
        """Accept one pending connection and run its join (bounded by a short timeout)."""
        conn, addr = self.listener.accept()
        tcp_options.tune(conn, self.config.tcp_cc)
        tcp_options.pace(conn, self.config.send.pace_pps)
        stream = FrameStream(conn, f"worker at {addr[0]}:{addr[1]}",
                             min(self.config.peer_timeout, _HANDSHAKE_TIMEOUT), self.counters)
        try:
            rank = self._handshake(stream, addr)
        except (PeerTimeout, PacketError) as exc:
            self.counters["drop_bad_hello"] += 1
            self.refused.append(f"{addr[0]}:{addr[1]}: {exc}")
            rank = None
        else:
            if rank is None:
                self.refused.append(f"{addr[0]}:{addr[1]}: HELLO refused (key, job or "
                                    f"configuration)")
        if rank is None:
            conn.close()
            return
        stream.timeout = self.config.peer_timeout
        conn.settimeout(self.config.peer_timeout)
        stream.peer_name = f"worker rank {rank} at {addr[0]}:{addr[1]}"
        self.streams[rank] = stream

    def _poll_joins(self, wait: float = 0.0) -> None:
        """Run the join of every connection pending now (or within ``wait`` s)."""
        while select.select([self.listener], [], [], wait)[0]:
            self._accept_one()
            wait = 0.0

    def _accept_all(self) -> None:
        give_up = time.monotonic() + self.config.join_timeout
        while len(self.streams) < self.workers:
            left = give_up - time.monotonic()
            missing = sorted(set(range(self.workers)) - set(self.streams))
            if left <= 0 or not select.select([self.listener], [], [], left)[0]:
                refused = f" (joins refused: {'; '.join(self.refused)})" if self.refused else ""
                raise PeerTimeout(f"workers {missing} did not connect within "
                                  f"{self.config.join_timeout:.1f} s{refused}")
            self._accept_one()

    def _leave_behind(self, rank: int, round_: int, why: str) -> None:
        """``rank``'s connection broke or went silent in ``round_``: go on without it."""
        stream = self.streams.pop(rank, None)
        if stream is not None:
            stream.sock.close()
        self.counters["connection_lost"] += 1
        if self.membership.mark_absent(rank, round_):
            self.member_events.append({"rank": rank, "change": "absent", "round": round_,
                                       "reason": why})

    def gather(self, round_: int, required: tuple[float, ...]) -> Gathered:
        self.membership.next_pull = round_
        if not self._started:
            self._accept_all()
            self._started = True
        self._poll_joins()
        t0 = time.monotonic()
        pushers = {r: self.streams[r] for r in self.membership.pushers(round_) if r in self.streams}
        # every push is read at once: a silent worker holds the round up --peer-timeout
        # (--join-timeout in round 0, as on UDP), however many fall silent together
        absent = self.config.join_timeout if round_ == 0 else self.config.peer_timeout
        raw, failed = read_rounds(pushers, round_bytes(self.plan), absent)
        failed.update({r: f"worker rank {r} has no connection"
                       for r in self.membership.pushers(round_) if r not in pushers})
        bufs: dict[int, TensorBuffer] = {}
        for rank, data in sorted(raw.items()):
            try:
                bufs[rank] = parse_layers(data, pushers[rank].peer_name, self.plan,
                                          self.config.job_id, rank, round_)[0]
            except PeerTimeout as exc:
                failed[rank] = str(exc)
                continue
            self.membership.data_from(rank)
        broke = sorted(failed)    # pushers whose connection broke in this round (as UDP: absent)
        for rank in broke:
            self._leave_behind(rank, round_, failed[rank])
        lost = sorted({*self.membership.missing(round_), *broke})
        for rank in lost:
            self.membership.contribution_lost(rank)
        nothing = [0.0] * self.plan.num_layers
        return Gathered(values={r: b.values for r, b in bufs.items()},
                        delivered={r: b.delivered for r, b in bufs.items()},
                        fractions={**{r: list(nothing) for r in broke},
                                   **{r: b.fractions() for r, b in bufs.items()}},
                        closed_by={**{r: "absent" for r in broke}, **{r: "complete" for r in bufs}},
                        seconds=time.monotonic() - t0, lost=lost)

    def scatter(self, round_: int, layers: list[np.ndarray], last: bool,
                next_required: tuple[float, ...] | None, next_round: object = None) -> float:
        """Send `layers` to every worker taking part; seconds taken (`next_round` is for UDP: a
        controller's policy needs --transport ltp). Fewer than --min-workers present: wait (up
        to --outage-horizon) for workers to connect again."""
        t0 = time.monotonic()
        self._poll_joins()
        while not self.membership.check_quorum(round_):
            self._poll_joins(QUORUM_POLL)
        self.membership.next_pull = round_ + 1
        flags = wire.FLAG_PULL | (wire.FLAG_LAST if last else 0)
        data = encode_layers(self.plan, layers, self.config.job_id, wire.PS_RANK, round_, flags)
        for rank in self.membership.pullers(round_):
            stream = self.streams.get(rank)
            if stream is None:
                continue
            try:
                stream.write(data)
            except PeerTimeout as exc:
                self._leave_behind(rank, round_, str(exc))
                continue
            self.membership.data_from(rank)
        self.counters["retransmissions"] = sum(s.retransmissions() for s in self.streams.values())
        return time.monotonic() - t0

    def describe(self) -> dict:
        """What the TCP connections really use (per worker rank), and how ECN was set."""
        return {"ecn_setup": self.ecn_setup,
                "connections": {r: tcp_options.describe(s.sock) for r, s in sorted(self.streams.items())}}

    def close(self) -> None:
        for stream in self.streams.values():
            stream.sock.close()
        self.listener.close()


class TcpWorkerExchange:
    """Worker side: one connection to the PS (retried until --join-timeout); after it broke,
    `join` connects again and re-joins with the job's key (worker.py rides the outage out)."""

    def __init__(self, config: TransportConfig, plan: ChunkPlan, rank: int,
                 ps: tuple[str, int], bind: tuple[str, int]) -> None:
        self.config = config
        self.plan = plan
        self.rank = rank
        self.ps = ps
        self.bind = bind
        self.counters = Counters()
        self.ecn_setup = tcp_options.check_ecn(config.tcp_ecn)
        # a silent PS is waited for as on UDP: twice as long as the PS waits for a worker
        self.patience = ps_patience(config.peer_timeout)
        self.stream = self._connect(config.join_timeout)
        self.fingerprint = fingerprint(plan.layer_sizes, plan.chunking_key(), config)
        self._round0 = True
        self._joined = False

    def _connect(self, timeout: float) -> FrameStream:
        """A new connection to the PS, retried until ``timeout`` s passed (PeerTimeout)."""
        ps = self.ps
        give_up = time.monotonic() + timeout
        while True:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                tcp_options.tune(sock, self.config.tcp_cc)
            except ConfigError:
                sock.close()
                raise
            try:
                sock.bind((self.bind[0], 0))
                sock.settimeout(max(give_up - time.monotonic(), 0.1))
                sock.connect(ps)
                break
            except OSError as exc:
                sock.close()
                if time.monotonic() >= give_up:
                    raise PeerTimeout(f"parameter server {ps[0]}:{ps[1]} did not accept a TCP "
                                      f"connection within {timeout:.1f} s "
                                      f"({exc.strerror or exc})") from None
                time.sleep(_CONNECT_RETRY)
        tcp_options.pace(sock, self.config.send.pace_pps)
        return FrameStream(sock, f"parameter server {ps[0]}:{ps[1]}", self.patience,
                           self.counters)

    def join(self, timeout: float | None = None, forget_below: int = 0) -> int:
        """The join handshake with the job's key (hosts/exchange/join.py); the first round we
        push (0 at the start, later when re-joining a running job: see `catch_up`). A join
        after the first opens a new connection (within ``timeout``, default --join-timeout).
        A handshake the PS gave up on (it closed the connection: a lost segment whose
        retransmission outlasted the PS's short handshake timeout) is tried again on a new
        connection, JOIN_ATTEMPTS times in all within ``timeout``; a PS silent for the
        worker's patience is not tried again.
        ConfigError if the PS's configuration differs, PeerTimeout if it does not prove the key."""
        timeout = self.config.join_timeout if timeout is None else timeout
        give_up = time.monotonic() + timeout
        if self._joined:
            self._reconnect(timeout)
        for attempt in range(1, JOIN_ATTEMPTS + 1):
            try:
                first_push = self._handshake()
                break
            except _HandshakeAbandoned:
                left = give_up - time.monotonic()
                if attempt == JOIN_ATTEMPTS or left <= 0:
                    raise
                self.counters["join_retries"] += 1
                self._reconnect(left)
        self._joined = True
        if first_push > 0:
            self._round0 = False
        return first_push

    def _reconnect(self, timeout: float) -> None:
        self.stream.sock.close()
        self.stream = self._connect(timeout)
        self.counters["reconnects"] += 1

    def _handshake(self) -> int:
        """One join on the current connection: the first round we push."""
        cfg = self.config
        client = JoinClient(cfg.job_key, cfg.job_id, self.rank, self.fingerprint)
        hello = client.next_hello()
        first_push = 0
        while not client.joined:
            try:
                self.stream.write(wire.pack_header(wire.KIND_HELLO, 0, cfg.job_id, self.rank,
                                                   wire.ALL_LAYERS, 0, payload_len=len(hello)) + hello)
                hdr, payload = self.stream.read_frame()
                if hdr.kind != wire.KIND_HELLO_ACK:
                    raise PacketError("corrupt", f"{wire.KIND_NAMES[hdr.kind]} instead of HELLO_ACK")
                hello = client.on_ack(payload)
                first_push = hdr.round
            except PacketError as exc:
                raise PeerTimeout(f"{self.stream.peer_name} answered HELLO badly ({exc}; a "
                                  f"different --job-key?)") from None
            except ConnectionClosed as exc:
                raise _HandshakeAbandoned(f"{exc} during the join (a different --job-key?)") from None
            except PeerTimeout as exc:
                raise PeerTimeout(f"{exc} during the join (a different --job-key?)") from None
            if hello is None and not client.joined:
                raise PeerTimeout(f"{self.stream.peer_name} answered HELLO out of order")
        if client.ps_fingerprint != self.fingerprint:
            raise ConfigError(f"{self.stream.peer_name} runs a different configuration (model "
                              f"layer sizes, --chunk-elems or the push bounds that size the "
                              f"default chunks, --transport or --job differ)")
        return first_push

    def catch_up(self, round_: int) -> Pulled:
        """After joining a running job: receive the pull of ``round_`` (the current model)."""
        return self.pull(round_)

    def push(self, round_: int, layers: list[np.ndarray]) -> dict:
        t0 = time.monotonic()
        self.stream.write(encode_layers(self.plan, layers, self.config.job_id, self.rank,
                                        round_, 0))
        self.counters["retransmissions"] = self.stream.retransmissions()
        return {"push_s": time.monotonic() - t0, "closed_by": "complete"}

    def pull(self, round_: int) -> Pulled:
        t0 = time.monotonic()
        if self._round0:
            # the first pull waits for every worker to join: allow the join timeout
            self.stream.sock.settimeout(self.config.join_timeout + self.patience)
        # waiting: until the PS's first pull bytes are readable (the kernel's timeout still rules)
        select.select([self.stream.sock], [], [], self.stream.sock.gettimeout())
        first = time.monotonic()
        buf, flags = read_layers(self.stream, self.plan, self.config.job_id, wire.PS_RANK, round_)
        if self._round0:
            self.stream.sock.settimeout(self.patience)
            self._round0 = False
        return Pulled(values=buf.values, delivered=buf.delivered, fractions=buf.fractions(),
                      closed_by="complete", last=bool(flags & wire.FLAG_LAST),
                      seconds=time.monotonic() - t0, wait=first - t0)

    def linger(self) -> None:
        pass

    def describe(self) -> dict:
        """What the TCP connection really uses, and how ECN was set."""
        return {"ecn_setup": self.ecn_setup, "connection": tcp_options.describe(self.stream.sock)}

    def close(self) -> None:
        self.stream.sock.close()
