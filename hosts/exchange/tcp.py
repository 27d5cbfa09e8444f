"""The reliable baseline: the same PS/worker exchange over TCP (one connection per worker).

Frames are the gradient header + payload, exactly as on UDP; a worker opens with the join
handshake of hosts/exchange/join.py (HELLO / HELLO_ACK frames proving the job's key).
"""
from __future__ import annotations

import select
import socket
import struct
import time

import numpy as np

from hosts import wire
from hosts.errors import ConfigError, PacketError, PeerTimeout
from hosts.exchange import tcp_options
from hosts.exchange.config import TransportConfig, fingerprint
from hosts.exchange.join import JoinClient, JoinServer
from hosts.exchange.results import Gathered, Pulled
from hosts.transport.chunking import ChunkPlan
from hosts.transport.counters import Counters
from hosts.transport.reassembly import TensorBuffer

_CONNECT_RETRY = 0.1
_HANDSHAKE_TIMEOUT = 2.0    # a connection silent in the join must not hold the others up long


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
                raise PeerTimeout(f"{self.peer_name}: connection failed ({exc.strerror})") from None
            if not part:
                raise PeerTimeout(f"{self.peer_name} closed the connection")
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
            raise PeerTimeout(f"{self.peer_name}: connection failed ({exc.strerror})") from None
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


def read_layers(stream: FrameStream, plan: ChunkPlan, job: int, rank: int,
                round_: int) -> tuple[TensorBuffer, int]:
    """Read one round (every chunk of `rank`'s layers, one read) into a buffer; (buffer, flags)."""
    size = plan.total_chunks * wire.HEADER_LEN + 4 * sum(plan.layer_sizes)
    data = memoryview(stream.read_exact(size))
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
        raise PeerTimeout(f"{stream.peer_name} sent a bad frame ({exc})") from None
    return buf, flags


class TcpServerExchange:
    """PS side: accepts one connection per worker rank, then reliable gather/scatter."""

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

    def _handshake(self, stream: FrameStream, addr: tuple[str, int]) -> int | None:
        """The join on a new connection: the rank it proved with our configuration, or None."""
        frame = stream.read_frame()
        rank = frame[0].worker_rank
        for _ in range(2):      # step 1 (challenge), then step 3 (welcome)
            hdr, payload = frame
            if hdr.kind != wire.KIND_HELLO or hdr.job_id != self.config.job_id \
                    or hdr.worker_rank != rank or rank in self.streams:
                self.counters["drop_bad_hello"] += 1
                return None
            answer = self.join.on_hello(rank, addr, payload)
            if answer.reply is None:
                return None
            stream.write(wire.pack_header(wire.KIND_HELLO_ACK, 0, self.config.job_id,
                                          wire.PS_RANK, wire.ALL_LAYERS, 0,
                                          payload_len=len(answer.reply)) + answer.reply)
            if answer.proven:
                if answer.fingerprint != self.fingerprint:
                    self.counters["hello_config_mismatch"] += 1
                    return None
                return rank
            frame = stream.read_frame()
        return None

    def _accept_all(self) -> None:
        give_up = time.monotonic() + self.config.join_timeout
        while len(self.streams) < self.workers:
            left = give_up - time.monotonic()
            missing = sorted(set(range(self.workers)) - set(self.streams))
            if left <= 0 or not select.select([self.listener], [], [], left)[0]:
                raise PeerTimeout(f"workers {missing} did not connect within "
                                  f"{self.config.join_timeout:.1f} s")
            conn, addr = self.listener.accept()
            tcp_options.tune(conn, self.config.tcp_cc)
            tcp_options.pace(conn, self.config.send.pace_pps)
            stream = FrameStream(conn, f"worker at {addr[0]}:{addr[1]}",
                                 min(self.config.peer_timeout, _HANDSHAKE_TIMEOUT), self.counters)
            try:
                rank = self._handshake(stream, addr)
            except (PeerTimeout, PacketError):
                self.counters["drop_bad_hello"] += 1
                rank = None
            if rank is None:
                conn.close()
                continue
            stream.timeout = self.config.peer_timeout
            conn.settimeout(self.config.peer_timeout)
            stream.peer_name = f"worker rank {rank}"
            self.streams[rank] = stream

    def gather(self, round_: int, required: tuple[float, ...]) -> Gathered:
        if not self.streams:
            self._accept_all()
        t0 = time.monotonic()
        bufs = {r: read_layers(s, self.plan, self.config.job_id, r, round_)[0]
                for r, s in sorted(self.streams.items())}
        return Gathered(values={r: b.values for r, b in bufs.items()},
                        delivered={r: b.delivered for r, b in bufs.items()},
                        fractions={r: b.fractions() for r, b in bufs.items()},
                        closed_by={r: "complete" for r in bufs}, seconds=time.monotonic() - t0)

    def scatter(self, round_: int, layers: list[np.ndarray], last: bool,
                next_required: tuple[float, ...] | None, next_round: object = None) -> float:
        """Send `layers` to every worker; seconds taken (`next_round` is for UDP: a controller's
        policy needs --transport ltp)."""
        t0 = time.monotonic()
        flags = wire.FLAG_PULL | (wire.FLAG_LAST if last else 0)
        data = encode_layers(self.plan, layers, self.config.job_id, wire.PS_RANK, round_, flags)
        for stream in self.streams.values():
            stream.write(data)
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
    """Worker side: one connection to the PS (retried until --join-timeout)."""

    def __init__(self, config: TransportConfig, plan: ChunkPlan, rank: int,
                 ps: tuple[str, int], bind: tuple[str, int]) -> None:
        self.config = config
        self.plan = plan
        self.rank = rank
        self.counters = Counters()
        self.ecn_setup = tcp_options.check_ecn(config.tcp_ecn)
        give_up = time.monotonic() + config.join_timeout
        while True:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                tcp_options.tune(sock, config.tcp_cc)
            except ConfigError:
                sock.close()
                raise
            try:
                sock.bind((bind[0], 0))
                sock.settimeout(max(give_up - time.monotonic(), 0.1))
                sock.connect(ps)
                break
            except OSError as exc:
                sock.close()
                if time.monotonic() >= give_up:
                    raise PeerTimeout(f"parameter server {ps[0]}:{ps[1]} did not accept a TCP "
                                      f"connection within {config.join_timeout:.1f} s "
                                      f"({exc.strerror or exc})") from None
                time.sleep(_CONNECT_RETRY)
        tcp_options.pace(sock, config.send.pace_pps)
        self.stream = FrameStream(sock, f"parameter server {ps[0]}:{ps[1]}", config.peer_timeout,
                                  self.counters)
        self.fingerprint = fingerprint(plan.layer_sizes, plan.chunking_key(), config)
        self._round0 = True

    def join(self) -> None:
        """The join handshake with the job's key (hosts/exchange/join.py); ConfigError if the
        PS's configuration differs, PeerTimeout if it does not prove the key."""
        cfg = self.config
        client = JoinClient(cfg.job_key, cfg.job_id, self.rank, self.fingerprint)
        hello = client.next_hello()
        while not client.joined:
            self.stream.write(wire.pack_header(wire.KIND_HELLO, 0, cfg.job_id, self.rank,
                                               wire.ALL_LAYERS, 0, payload_len=len(hello)) + hello)
            try:
                hdr, payload = self.stream.read_frame()
                if hdr.kind != wire.KIND_HELLO_ACK:
                    raise PacketError("corrupt", f"{wire.KIND_NAMES[hdr.kind]} instead of HELLO_ACK")
                hello = client.on_ack(payload)
            except PacketError as exc:
                raise PeerTimeout(f"{self.stream.peer_name} answered HELLO badly ({exc}; a "
                                  f"different --job-key?)") from None
            except PeerTimeout as exc:
                raise PeerTimeout(f"{exc} during the join (a different --job-key?)") from None
            if hello is None and not client.joined:
                raise PeerTimeout(f"{self.stream.peer_name} answered HELLO out of order")
        if client.ps_fingerprint != self.fingerprint:
            raise ConfigError(f"{self.stream.peer_name} runs a different configuration (model "
                              f"layer sizes, --chunk-elems or the push bounds that size the "
                              f"default chunks, --transport or --job differ)")

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
            self.stream.sock.settimeout(self.config.join_timeout + self.config.peer_timeout)
        # waiting: until the PS's first pull bytes are readable (the kernel's timeout still rules)
        select.select([self.stream.sock], [], [], self.stream.sock.gettimeout())
        first = time.monotonic()
        buf, flags = read_layers(self.stream, self.plan, self.config.job_id, wire.PS_RANK, round_)
        if self._round0:
            self.stream.sock.settimeout(self.config.peer_timeout)
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
