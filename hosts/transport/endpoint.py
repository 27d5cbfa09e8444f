"""The socket driver's port: one UDP socket speaking the gradient header (hosts/transport/port.py)."""
from __future__ import annotations

import select
import socket
import struct
import time

from hosts.errors import ConfigError
from hosts.transport.counters import Counters
from hosts.transport.port import Port, Received

__all__ = ["Endpoint", "Received"]

SOCKET_BUFFER_BYTES = 4 << 20
MAX_DATAGRAM = 65535
_RECV_BATCH = 512


class Endpoint(Port):
    """A `Port` on a non-blocking UDP socket bound to `bind`, on the host's monotonic clock:
    every datagram goes out at once with its TOS, `receive` waits for and validates arrivals.
    The port's arguments (`job_id`, `rank`, `plain`, `peer`, `mac_key`, `mac_mode`) mean what they mean there.
    """

    def __init__(self, bind: tuple[str, int], job_id: int, rank: int,
                 counters: Counters | None = None, plain: bool = False,
                 peer: tuple[str, int] | None = None, mac_key: bytes | None = None,
                 mac_mode: str = "all") -> None:
        super().__init__(job_id, rank, time.monotonic, counters, plain, peer, mac_key, mac_mode)
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
        self._tos_cmsg: dict[int, list[tuple[int, int, bytes]]] = {}
        self._buf = bytearray(MAX_DATAGRAM)
        self._ancillary = socket.CMSG_SPACE(4)

    @property
    def address(self) -> tuple[str, int]:
        return self.sock.getsockname()

    def close(self) -> None:
        self.sock.close()

    def transmit(self, data: bytes, addr: tuple[str, int], tos: int) -> None:
        """Put one datagram on the socket with IPv4 TOS `tos`, given with the datagram
        (IP_TOS ancillary data: one system call per datagram, however often the TOS changes;
        a setsockopt per change cost a second call for nearly every DATA packet)."""
        cmsg = self._tos_cmsg.get(tos)
        if cmsg is None:
            cmsg = self._tos_cmsg[tos] = [(socket.IPPROTO_IP, socket.IP_TOS, struct.pack("i", tos))]
        try:
            self.sock.sendmsg([data], cmsg, 0, addr)
        except BlockingIOError:
            self.counters["send_blocked"] += 1
            return
        except OSError:
            self.counters["send_error"] += 1
            return
        self.counters["bytes_sent"] += len(data)
        self.counters["packets_sent"] += 1

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
