"""The switch's ports: Linux interfaces (raw AF_PACKET sockets) or pcap files (`--use-files`).

`SwitchPorts` receives frames on every port in one thread (epoll; up to RECV_BATCH frames per
port per turn, copied once out of a preallocated buffer) and hands them to `on_frame(port,
frame)` (the target's ingress), which may transmit on the same thread. `transmit(port, frame)`
is the target's egress: it applies the port's link impairment in user space (loss, loss
bursts, delay and jitter through a `DelayLine`) and sends the frame; `set_impairment` replaces
a port's impairment while frames flow (its burst times then count from that call). Rate
bursts are not applied here: they shape the traffic manager (`links.port_rates`). With `pcap_dir`
every port records `IFACE_in.pcap` (frames received) and `IFACE_out.pcap` (frames put on the
wire), as BMv2's `--pcap` does.

`counters()` gives each port's frame counters, including the frames the kernel dropped because
its receive socket was full (`PACKET_STATISTICS`). The switch never re-receives what it sent:
sockets set PACKET_IGNORE_OUTGOING and, where the kernel lacks it, outgoing frames are
recognised by their packet type and skipped.
"""
from __future__ import annotations

import errno
import os
import random
import select
import selectors
import socket
import struct
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

from p4target.switch.links.delay_line import DelayLine
from p4target.switch.errors import PortError
from p4target.switch.file_ports import FilePort, replay_files
from p4target.switch.links.impairments import Impairment
from p4target.switch.pcap import PcapWriter
from p4target.switch.switch_log import LEVELS, SwitchLog

ETH_P_ALL = 0x0003
SEND_WARN_INTERVAL = 10.0   # s between two warnings of one port about one kind of send failure
SOL_PACKET = 263
PACKET_ADD_MEMBERSHIP = 1
PACKET_MR_PROMISC = 1
PACKET_IGNORE_OUTGOING = 23
PACKET_OUTGOING = 4
RECV_BUFFER = 65536 + 64  # GRO may hand us frames larger than the MTU
RECV_SOCKET_BYTES = 4 << 20
SO_RCVBUFFORCE = 33
RECV_BATCH = 64  # frames read from one port before the other ports get their turn
PACKET_STATISTICS = 6  # getsockopt: struct tpacket_stats {tp_packets, tp_drops}, reset on read
DEBUG = LEVELS["debug"]

FrameHandler = Callable[[int, bytes], None]


@dataclass
class PortStats:
    """Frame counters of one port."""

    received: int = 0
    transmitted: int = 0
    impairment_drops: int = 0
    send_errors: int = 0
    socket_drops: int = 0  # frames the kernel dropped because the receive socket was full


class InterfacePort:
    """One switch port on a Linux interface: a promiscuous AF_PACKET socket bound to it."""

    def __init__(self, port: int, iface: str) -> None:
        self.port = port
        self.iface = iface
        self.filter_outgoing = False
        try:
            # protocol 0 until bind: a socket opened with ETH_P_ALL hears every interface
            # until it is bound, and would queue other links' frames as this port's
            sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
        except PermissionError:
            raise PortError(f"cannot open interface '{iface}': raw sockets need root (CAP_NET_RAW)") from None
        try:
            sock.bind((iface, ETH_P_ALL))  # Python converts the protocol to network order
            ifindex = socket.if_nametoindex(iface)
        except OSError as exc:
            sock.close()
            if exc.errno in (errno.ENODEV, errno.ENXIO, None):
                raise PortError(f"interface '{iface}' (port {port}) does not exist") from None
            raise PortError(f"cannot bind to interface '{iface}' (port {port}): {exc.strerror or exc}") from None
        mreq = struct.pack("iHH8s", ifindex, PACKET_MR_PROMISC, 0, b"")
        sock.setsockopt(SOL_PACKET, PACKET_ADD_MEMBERSHIP, mreq)
        try:
            sock.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
        except OSError:
            self.filter_outgoing = True  # kernels before 4.20: skip by packet type
        try:  # beyond net.core.rmem_max (root only): bursts (incast) must not overflow the socket
            sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, RECV_SOCKET_BYTES)
        except OSError:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RECV_SOCKET_BYTES)
        sock.setblocking(False)
        self.sock = sock

    def fileno(self) -> int:
        return self.sock.fileno()

    def read_batch(self) -> list[bytes]:
        """Frames waiting on the socket (up to RECV_BATCH), without blocking."""
        frames = []
        recvfrom = self.sock.recvfrom
        for _ in range(RECV_BATCH):
            try:
                data, addr = recvfrom(RECV_BUFFER)
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                break  # interface went down or away; the poller will tell us again
            if self.filter_outgoing and addr[2] == PACKET_OUTGOING:
                continue
            frames.append(data)
        return frames

    def take_socket_drops(self) -> int:
        """Frames the kernel dropped on this socket since the last call (its buffer was full)."""
        try:
            raw = self.sock.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8)
        except OSError:
            return 0
        return struct.unpack("II", raw)[1]

    def send(self, frame: bytes) -> None:
        """Put one frame on the wire; OSError if the kernel refuses it (too long, link down)."""
        try:
            self.sock.send(frame)
        except BlockingIOError:
            # a full socket buffer: wait briefly for room rather than drop (as a NIC ring would)
            self._wait_writable()
            self.sock.send(frame)

    def _wait_writable(self) -> None:
        with selectors.DefaultSelector() as sel:
            sel.register(self.sock, selectors.EVENT_WRITE)
            sel.select(0.05)

    def close(self) -> None:
        self.sock.close()


@dataclass
class _PortState:
    io: InterfacePort | FilePort
    # (impairment, monotonic time its burst windows count from): one attribute, so the data
    # path always sees a matching pair while a control thread replaces it
    impairment: tuple[Impairment, float] | None
    rng: random.Random
    pcap_in: PcapWriter | None = None
    pcap_out: PcapWriter | None = None
    pcap_lock: threading.Lock = field(default_factory=threading.Lock)
    stats: PortStats = field(default_factory=PortStats)
    # per kind of send failure: when it was last warned about, and how many since then
    send_warned_at: dict[str, float] = field(default_factory=dict)
    send_unwarned: dict[str, int] = field(default_factory=dict)


class SwitchPorts:
    """Every port of one switch: a receive thread, impaired transmit, optional pcap capture."""

    def __init__(self, interfaces: dict[int, str], on_frame: FrameHandler, *,
                 log: SwitchLog | None = None, pcap_dir: str | None = None,
                 impairments: dict[int, Impairment] | None = None,
                 use_files_wait: int | None = None, seed: int | None = None) -> None:
        self._on_frame = on_frame
        self._log = log or SwitchLog()
        self._use_files_wait = use_files_wait
        self._ports: dict[int, _PortState] = {}
        self._start = time.monotonic()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._delay = DelayLine(self._send_now)
        impairments = impairments or {}
        for port in impairments:
            if port not in interfaces:
                raise PortError(f"--impair names port {port}, which has no interface (-i {port}@IFACE)")
        try:
            for port, iface in sorted(interfaces.items()):
                io = FilePort(port, iface) if use_files_wait is not None else InterfacePort(port, iface)
                rng = random.Random(None if seed is None else seed * 1000003 + port)
                imp = impairments.get(port)
                self._ports[port] = _PortState(io, None if imp is None else (imp, self._start), rng)
            if pcap_dir is not None and use_files_wait is None:
                self._open_pcaps(pcap_dir)
        except BaseException:
            self._close_all()
            raise
        self._wake_r, self._wake_w = os.pipe()
        self._closed = False

    def _open_pcaps(self, pcap_dir: str) -> None:
        try:
            os.makedirs(pcap_dir, exist_ok=True)
            for state in self._ports.values():
                base = os.path.join(pcap_dir, state.io.iface)
                state.pcap_in = PcapWriter(base + "_in.pcap")
                state.pcap_out = PcapWriter(base + "_out.pcap")
        except OSError as exc:
            raise PortError(f"--pcap: cannot write capture files in '{pcap_dir}': {exc.strerror}") from None

    # -- public ----------------------------------------------------------------------------
    @property
    def ports(self) -> dict[int, str]:
        """Port number -> interface name."""
        return {p: s.io.iface for p, s in self._ports.items()}

    def stats(self, port: int) -> PortStats:
        """Counters of one port."""
        return self._ports[port].stats

    @property
    def started_at(self) -> float:
        """Monotonic time of `start()`: burst times of the constructor's impairments count from it."""
        return self._start

    def impairment(self, port: int) -> Impairment | None:
        """The impairment now applied on `port` (None: none); PortError for an unknown port."""
        current = self._state(port).impairment
        return None if current is None else current[0]

    def set_impairment(self, port: int, impairment: Impairment | None, since: float | None = None) -> None:
        """Replace `port`'s impairment (None: clear it); its burst times count from `since`
        (monotonic, default now). Frames already delayed keep their due time."""
        state = self._state(port)
        state.impairment = None if impairment is None else (impairment, time.monotonic() if since is None else since)
        self._log.info(f"impairment port {port}: {impairment.describe() if impairment else 'off'}")

    def _state(self, port: int) -> _PortState:
        state = self._ports.get(port)
        if state is None:
            raise PortError(f"port {port} has no interface")
        return state

    def start(self) -> None:
        """Start receiving (or replaying input files) and the delay line."""
        self._start = time.monotonic()
        self._delay.start()
        for port, state in self._ports.items():
            if state.impairment is not None:
                state.impairment = (state.impairment[0], self._start)
                self._log.info(f"impairment port {port}: {state.impairment[0].describe()}")
        target = self._replay_files if self._use_files_wait is not None else self._receive_loop
        thread = threading.Thread(target=target, name="p4target-rx", daemon=True)
        thread.start()
        self._threads.append(thread)

    def transmit(self, port: int, frame: bytes) -> None:
        """Egress: apply the port's impairment, then send now or when the delay has passed."""
        state = self._ports.get(port)
        if state is None:
            if self._log.enabled("debug"):
                self._log.debug(f"Dropping packet of size {len(frame)} for port {port}: no such port")
            return
        current = state.impairment
        if current is None:
            if state.pcap_out is None and self._log.level > DEBUG and not self._stop.is_set():
                try:
                    state.io.sock.send(frame)  # type: ignore[union-attr]
                except (OSError, AttributeError):
                    pass  # full socket buffer, a failure or a file port: the general path below
                else:
                    state.stats.transmitted += 1
                    state.last_send_error = None
                    return
            self._send_now(port, frame)
            return
        imp, since = current
        hold = imp.decide(time.monotonic() - since, state.rng)
        if hold is None:
            state.stats.impairment_drops += 1
            if self._log.enabled("debug"):
                self._log.debug(f"Impairment dropped packet of size {len(frame)} out of port {port}")
            return
        if hold <= 0.0:
            self._send_now(port, frame)
        else:
            self._delay.schedule(port, frame, hold)

    def counters(self) -> dict[int, dict[str, int]]:
        """Per port: received, transmitted, socket_drops, impairment_drops, send_errors
        (socket drops read from the kernel first)."""
        self.take_socket_drops()
        return {port: dict(vars(state.stats)) for port, state in sorted(self._ports.items())}

    def take_socket_drops(self) -> dict[int, int]:
        """Per port: receive-socket drops since the last call, also added to the port's stats."""
        out = {}
        for port, state in self._ports.items():
            taker = getattr(state.io, "take_socket_drops", None)
            if taker is not None and not self._closed:
                dropped = taker()
                state.stats.socket_drops += dropped
                out[port] = dropped
        return out

    def stop(self) -> None:
        """Stop the threads, discard frames still delayed, close sockets and pcap files. Idempotent."""
        if self._stop.is_set():
            return
        self._stop.set()
        try:
            os.write(self._wake_w, b"x")
        except OSError:
            pass
        for thread in self._threads:
            thread.join(timeout=5)
        discarded = self._delay.stop()
        if discarded:
            self._log.info(f"{discarded} delayed packet(s) discarded at shutdown")
        self.take_socket_drops()
        self._close_all()
        for fd in (self._wake_r, self._wake_w):
            try:
                os.close(fd)
            except OSError:
                pass

    # -- data path -------------------------------------------------------------------------
    def _send_now(self, port: int, frame: bytes) -> None:
        if self._stop.is_set():
            return
        state = self._ports[port]
        try:
            state.io.send(frame)
        except (OSError, ValueError) as exc:
            state.stats.send_errors += 1
            self._send_failed(port, state, len(frame), str(getattr(exc, "strerror", None) or exc))
            return
        state.stats.transmitted += 1
        if state.pcap_out is not None:
            with state.pcap_lock:
                if not self._stop.is_set():
                    state.pcap_out.write(frame)
        if self._log.enabled("debug"):
            self._log.debug(f"Transmitting packet of size {len(frame)} out of port {port}")

    def _send_failed(self, port: int, state: _PortState, size: int, reason: str) -> None:
        """One warning per port and kind of failure per SEND_WARN_INTERVAL, with the count of
        those in between (a deleted link or a stream of oversize frames must not flood the log,
        good sends in between included); the others are logged at debug."""
        now = time.monotonic()
        last = state.send_warned_at.get(reason)
        if last is not None and now - last < SEND_WARN_INTERVAL:
            state.send_unwarned[reason] = state.send_unwarned.get(reason, 0) + 1
            if self._log.enabled("debug"):
                self._log.debug(f"cannot send packet of size {size} out of port {port} "
                                f"({state.io.iface}): {reason}")
            return
        more = state.send_unwarned.pop(reason, 0)
        state.send_warned_at[reason] = now
        if self._log.enabled("warn"):
            self._log.warn(f"cannot send packet of size {size} out of port {port} "
                           f"({state.io.iface}): {reason}"
                           + (f" ({more} more since the last warning)" if more else ""))

    def _ingress(self, port: int, state: _PortState, frame: bytes) -> None:
        state.stats.received += 1
        if state.pcap_in is not None:
            with state.pcap_lock:
                state.pcap_in.write(frame)
        if self._log.enabled("debug"):
            self._log.debug(f"Processing packet received on port {port} (size {len(frame)})")
        try:
            self._on_frame(port, frame)
        except Exception as exc:  # one bad frame must not stop the receive thread
            self._log.error(f"packet from port {port} dropped: {type(exc).__name__}: {exc}")

    def _receive_loop(self) -> None:
        """Drain every readable port, up to RECV_BATCH frames at a time, into `on_frame`; each
        frame is copied once out of one preallocated buffer."""
        poller = select.epoll()
        try:
            poller.register(self._wake_r, select.EPOLLIN)
            ports: dict[int, tuple[int, _PortState]] = {}
            for port, state in self._ports.items():
                fd = state.io.fileno()
                poller.register(fd, select.EPOLLIN)
                ports[fd] = (port, state)
            buf = bytearray(RECV_BUFFER)
            view = memoryview(buf)
            while not self._stop.is_set():
                try:
                    events = poller.poll()
                except InterruptedError:
                    continue
                for fd, _ in events:
                    if fd == self._wake_r:
                        return
                    port, state = ports[fd]
                    self._drain(port, state, buf, view)
        finally:
            poller.close()

    def _drain(self, port: int, state: _PortState, buf: bytearray, view: memoryview) -> None:
        io = state.io
        stats = state.stats
        plain = state.pcap_in is None and self._log.level > DEBUG
        on_frame = self._on_frame
        if io.filter_outgoing:  # type: ignore[union-attr]
            frames = io.read_batch()  # type: ignore[union-attr]
        else:
            recv_into = io.sock.recv_into  # type: ignore[union-attr]
            frames = None
        for i in range(RECV_BATCH):
            if frames is None:
                try:
                    n = recv_into(buf)
                except (BlockingIOError, InterruptedError):
                    return
                except OSError:
                    return  # interface went down or away; the poller will tell us again
                frame = view[:n].tobytes()
            elif i < len(frames):
                frame = frames[i]
            else:
                return
            if plain:
                stats.received += 1
                try:
                    on_frame(port, frame)
                except Exception as exc:  # one bad frame must not stop the receive thread
                    self._log.error(f"packet from port {port} dropped: {type(exc).__name__}: {exc}")
            else:
                self._ingress(port, state, frame)

    def _replay_files(self) -> None:
        """--use-files: BMv2's pcap file reader (`file_ports.replay_files`)."""
        replay_files({port: s.io for port, s in self._ports.items()},  # type: ignore[misc]
                     self._use_files_wait or 0, self._stop,
                     lambda port, data: self._ingress(port, self._ports[port], data), self._log)

    def _close_all(self) -> None:
        self._closed = True
        for state in self._ports.values():
            with state.pcap_lock:
                for writer in (state.pcap_in, state.pcap_out):
                    if writer is not None:
                        try:
                            writer.close()
                        except OSError:
                            pass
            try:
                state.io.close()
            except OSError:
                pass
