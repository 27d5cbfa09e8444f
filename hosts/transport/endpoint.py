"""One UDP socket speaking the gradient header: validated receive, TOS per send, drop counters."""
from __future__ import annotations

import select
import socket
from dataclasses import dataclass

from hosts import wire
from hosts.errors import ConfigError, PacketError
from hosts.transport.counters import Counters

SOCKET_BUFFER_BYTES = 4 << 20
MAX_DATAGRAM = 65535
_RECV_BATCH = 512


@dataclass(frozen=True, slots=True)
class Received:
    """A validated gradient-transport packet."""

    header: wire.Header
    payload: bytes
    addr: tuple[str, int]
    tos: int = 0    # IPv4 TOS byte as it arrived (ECN bits 1..0: CE = 3)


class Endpoint:
    """A non-blocking UDP socket bound to `bind`; drops and counts anything malformed or foreign.

    `job_id` filters foreign jobs; `rank` is this agent's worker_rank on everything it sends.
    `plain`: every control packet carries FLAG_PLAIN and TOS 0 (no network assistance).
    `peer`: when set, datagrams from any other address are dropped (a worker talks to its
    parameter server only, so a spoofed packet cannot redirect or close its sessions).
    """

    def __init__(self, bind: tuple[str, int], job_id: int, rank: int,
                 counters: Counters | None = None, plain: bool = False,
                 peer: tuple[str, int] | None = None) -> None:
        self.job_id = job_id
        self.peer = peer
        self.rank = rank
        self.plain = plain
        self.counters = counters if counters is not None else Counters()
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        for opt in (socket.SO_RCVBUF, socket.SO_SNDBUF):
            self.sock.setsockopt(socket.SOL_SOCKET, opt, SOCKET_BUFFER_BYTES)
        try:
            self.sock.bind(bind)
        except OSError as exc:
            self.sock.close()
            raise ConfigError(f"cannot bind UDP {bind[0]}:{bind[1]}: {exc.strerror}") from None
        self.sock.setblocking(False)
        self.sock.setsockopt(socket.IPPROTO_IP, socket.IP_RECVTOS, 1)
        self._tos = -1
        self._buf = bytearray(MAX_DATAGRAM)
        self._ancillary = socket.CMSG_SPACE(4)

    @property
    def address(self) -> tuple[str, int]:
        return self.sock.getsockname()

    def close(self) -> None:
        self.sock.close()

    def send(self, data: bytes, addr: tuple[str, int], tos: int) -> None:
        """Send one datagram with IPv4 TOS `tos` (set only when it changes)."""
        if tos != self._tos:
            self.sock.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, tos)
            self._tos = tos
        try:
            self.sock.sendto(data, addr)
        except BlockingIOError:
            self.counters["send_blocked"] += 1
            return
        except OSError:
            self.counters["send_error"] += 1
            return
        self.counters["bytes_sent"] += len(data)
        self.counters["packets_sent"] += 1

    def send_control(self, kind: int, addr: tuple[str, int], round_: int, flags: int = 0,
                     layer: int = wire.ALL_LAYERS, payload: bytes = b"", chunk_seq: int = 0,
                     tos: int | None = None, tele_qdepth: int = 0, tele_qdelay_us: int = 0) -> None:
        """One header-only (or small-payload) control packet; TOS defaults to CONTROL_TOS, or
        0 on a plain endpoint (PCN passes its own TOS bits). An ACK's telemetry fields echo
        what the switches stamped into the DATA it acknowledges (switches stamp DATA only)."""
        if self.plain:
            flags |= wire.FLAG_PLAIN
        if tos is None:
            tos = 0 if self.plain else wire.CONTROL_TOS
        hdr = wire.pack_header(kind, flags, self.job_id, self.rank, layer, round_,
                               payload_len=len(payload), chunk_seq=chunk_seq,
                               tele_max_qdepth=min(tele_qdepth, 0xFFFF),
                               tele_qdelay_us=min(tele_qdelay_us, 0xFFFFFFFF))
        self.send(hdr + payload, addr, tos)

    def receive(self, timeout: float) -> list[Received]:
        """Wait up to `timeout` s, then return every valid packet waiting (malformed are counted)."""
        ready, _, _ = select.select([self.sock], [], [], max(timeout, 0.0))
        if not ready:
            return []
        out = []
        for _ in range(_RECV_BATCH):
            try:
                n, ancdata, _, addr = self.sock.recvmsg_into([self._buf], self._ancillary)
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                self.counters["recv_error"] += 1
                break
            tos = 0
            for level, kind, data in ancdata:
                if level == socket.IPPROTO_IP and kind == socket.IP_TOS and data:
                    tos = data[0]
            pkt = self.parse(bytes(self._buf[:n]), addr, tos)
            if pkt is not None:
                out.append(pkt)
        return out

    def parse(self, data: bytes, addr: tuple[str, int], tos: int = 0) -> Received | None:
        """Validate one datagram; None (and a counted drop) if it is not ours or malformed."""
        self.counters["bytes_received"] += len(data)
        self.counters["packets_received"] += 1
        if self.peer is not None and addr != self.peer:
            self.counters["drop_wrong_source"] += 1
            return None
        try:
            hdr = wire.unpack_header(data)
        except PacketError as exc:
            self.counters[f"drop_{exc.reason}"] += 1
            return None
        if hdr.kind not in wire.KIND_NAMES:
            self.counters["drop_corrupt"] += 1
            return None
        if hdr.job_id != self.job_id:
            self.counters["drop_foreign_job"] += 1
            return None
        return Received(hdr, data[wire.HEADER_LEN:], addr, tos)
