"""The socket driver's port: one UDP socket speaking the gradient header (hosts/transport/port.py).

Two ways to move datagrams, the same datagrams on the wire (tests/integration/hosts/
test_batch_io.py): `single`, the reference, one `sendmsg` per datagram as it is sent and one
`recvmsg_into` per datagram received; `batch` (the default where the native extension was
built), where what a step sends waits in the endpoint until the driver flushes it with one
`sendmmsg` (each datagram with its own address and TOS) and arrivals are drained with
`recvmmsg` into preallocated buffers (`native/batch_io.cpp`); there a sender's native DATA
frames (hosts/transport/data_frames.py) are built straight into the send queue
(`native/send_frames.cpp`), no bytes object per datagram, and signed there under `--packet-mac
all` by the native MAC. `--io batch|single` picks one.
"""
from __future__ import annotations

import select
import socket
import struct
import time
from typing import Callable

from hosts import wire
from hosts.errors import ConfigError
from hosts.transport import mac_impl, packet_mac
from hosts.transport.core import NATIVE_ERROR
from hosts.transport.counters import Counters
from hosts.transport.data_frames import Frames, is_native
from hosts.transport.port import Port, Received

__all__ = ["Endpoint", "IO_MODES", "Received", "default_io", "resolve_io"]

SOCKET_BUFFER_BYTES = 4 << 20
MAX_DATAGRAM = 65535
RECV_BATCH = 512
_RECV_SLOTS = 64     # recvmmsg buffers of MAX_DATAGRAM bytes each
IO_MODES = ("batch", "single")

if NATIVE_ERROR is None:
    from hosts.transport import _native
else:   # not built: the single path only
    _native = None


def default_io() -> str:
    """`batch` where the native extension was built, else `single`."""
    return "batch" if _native is not None else "single"


def resolve_io(io: str | None) -> str:
    """The I/O path that will run for the choice `io` (None: the default). `batch` without
    the extension runs `single` (the core's one line on stderr already says it is not built)."""
    if io is None:
        return default_io()
    if io not in IO_MODES:
        raise ConfigError(f"--io {io!r} is not one of {', '.join(IO_MODES)}")
    return io if _native is not None else "single"


class Endpoint(Port):
    """A `Port` on a non-blocking UDP socket bound to `bind`, on the host's monotonic clock:
    with `io="single"` every datagram goes out at once with its TOS; with `io="batch"` sent
    datagrams wait until `flush` (which `receive`, `Mux` and `close` call) puts them out in one
    `sendmmsg`. `receive` waits for and validates arrivals. The port's arguments (`job_id`,
    `rank`, `plain`, `peer`, `mac_key`, `mac_mode`) mean what they mean there.
    """

    def __init__(self, bind: tuple[str, int], job_id: int, rank: int,
                 counters: Counters | None = None, plain: bool = False,
                 peer: tuple[str, int] | None = None, mac_key: bytes | None = None,
                 mac_mode: str = "all", io: str = "single") -> None:
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
        self.io = resolve_io(io)
        # batch: the socket's reader (data_route.py hands DATA from it to native sessions)
        self.receiver = (_native.Receiver(self.sock.fileno(), _RECV_SLOTS)
                         if self.io == "batch" else None)
        self._queue = _native.SendQueue() if self.io == "batch" else None
        self.signs_data = (self.mac_key is not None
                           and packet_mac.signs(self.mac_mode, wire.KIND_DATA))

    @property
    def address(self) -> tuple[str, int]:
        return self.sock.getsockname()

    def close(self) -> None:
        if self.sock.fileno() >= 0:
            self.flush()
        self.sock.close()

    def transmit(self, data: bytes, addr: tuple[str, int], tos: int) -> None:
        """Put one datagram on the socket with IPv4 TOS `tos`, given with the datagram
        (IP_TOS ancillary data: no setsockopt when the TOS changes). `batch`: queue it for
        the next `flush`."""
        if self._queue is not None:
            self._queue.add(data, addr, tos)
            return
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

    def send_data(self, frames: Frames, idx: int, flags: int, addr: tuple[str, int],
                  tos: int) -> int:
        """`Port.send_data`; in `batch` with native frames (and, where DATA is signed, a
        native MAC) the frame is built and signed in the send queue."""
        if self._queue is not None and is_native(frames):
            if not self.signs_data:
                return self._queue.add_data(frames, idx, flags, addr, tos)
            if mac_impl.is_native(self.mac):   # signed by the Python MAC: the port's path
                return self._queue.add_data(frames, idx, flags, addr, tos, self.mac)
        return super().send_data(frames, idx, flags, addr, tos)

    def data_sink(self, frames: Frames) -> Callable[[Frames, int, int, tuple[str, int], int], int]:
        """`Port.data_sink`: in `batch` with native frames and DATA unsigned, the send queue's
        `add_data` (what `send_data` calls there, without the Python call around it)."""
        if self._queue is not None and is_native(frames) and not self.signs_data:
            return self._queue.add_data
        return self.send_data

    def flush(self) -> None:
        """`batch`: put every queued datagram on the socket, in order, in one `sendmmsg` per
        256; each counts as the single path counts it (sent, blocked or an error)."""
        if self._queue is None or not len(self._queue):
            return
        sent, nbytes, blocked, errors = self._queue.flush(self.sock.fileno())
        c = self.counters
        if sent:
            c["packets_sent"] += sent
            c["bytes_sent"] += nbytes
        if blocked:
            c["send_blocked"] += blocked
        if errors:
            c["send_error"] += errors

    def wait(self, timeout: float) -> bool:
        """Put out what waits to be sent (`flush`), then wait up to `timeout` s for a datagram
        to read; True when one waits."""
        self.flush()
        if self.receiver is not None and self.receiver.pending:
            return True
        ready, _, _ = select.select([self.sock], [], [], max(timeout, 0.0))
        return bool(ready)

    def receive(self, timeout: float) -> list[Received]:
        """Put out what waits to be sent (`flush`), wait up to `timeout` s, then return every
        valid packet waiting (malformed are counted)."""
        if not self.wait(timeout):
            return []
        if self.receiver is not None:
            return self._receive_batch()
        out = []
        for _ in range(RECV_BATCH):
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

    def _receive_batch(self) -> list[Received]:
        """What `receive` takes in `batch`: up to RECV_BATCH datagrams by `recvmmsg`."""
        got, err = self.receiver.recv(RECV_BATCH)
        if err:
            self.counters["recv_error"] += 1
        parse = self.parse
        out = []
        for data, addr, tos in got:
            pkt = parse(data, addr, tos)
            if pkt is not None:
                out.append(pkt)
        return out
