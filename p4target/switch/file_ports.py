"""`--use-files` ports as BMv2 runs them: port X reads `X_in.pcap` and writes `X_out.pcap`.

BMv2 opens every input when it adds the port (in port order, before its Thrift server starts),
reading the pcap header at once, and reads packets as a stream: after the WAIT seconds it feeds
the earliest pending record of all inputs, without waiting for the gaps between timestamps
(simple_switch turns BMv2's real-time replay off), until every input ends. An input may be a FIFO that a test driver (p4c's STF runner) opens after starting
the switch and fills while it runs: opening blocks until the writer comes, reading until it
writes or closes. A missing input is an error, as in BMv2.
"""
from __future__ import annotations

import os
import select
import stat
import struct
import threading
from typing import Callable

from p4target.switch.errors import PcapError, PortError
from p4target.switch.pcap import PcapRecord, PcapWriter
from p4target.switch.switch_log import SwitchLog

_POLL_S = 0.1  # how often a blocked read checks whether the switch is stopping
_MAGIC_LE, _MAGIC_BE = 0xA1B2C3D4, 0xD4C3B2A1
_MAGIC_NS_LE, _MAGIC_NS_BE = 0xA1B23C4D, 0x4D3CB2A1
_GLOBAL_HEADER_SIZE = 24


class _Stopped(Exception):
    pass


class FilePort:
    """One switch port backed by pcap files: reads `IFACE_in.pcap`, writes `IFACE_out.pcap`."""

    def __init__(self, port: int, iface: str) -> None:
        self.port = port
        self.iface = iface
        self.in_path = f"{iface}_in.pcap"
        self.out_path = f"{iface}_out.pcap"
        try:
            if not stat.S_ISFIFO(os.stat(self.in_path).st_mode) and not os.path.isfile(self.in_path):
                raise PortError(f"--use-files: input '{self.in_path}' for port {port} is not a file or FIFO")
            self._fd = os.open(self.in_path, os.O_RDONLY)  # a FIFO: waits for its writer, as BMv2
        except FileNotFoundError:
            raise PortError(f"--use-files: input file '{self.in_path}' for port {port} does not exist") from None
        except OSError as exc:
            raise PortError(f"--use-files: cannot open '{self.in_path}': {exc.strerror}") from None
        self._buffer = b""
        self._stop: threading.Event | None = None
        try:
            self._record, self._divisor = self._read_header()
            self.writer = PcapWriter(self.out_path)
        except OSError as exc:
            os.close(self._fd)
            raise PortError(f"--use-files: cannot write '{self.out_path}': {exc.strerror}") from None
        except BaseException:
            os.close(self._fd)
            raise
        self._lock = threading.Lock()

    def _read_exact(self, size: int) -> bytes:
        """`size` bytes, fewer only at the end of the input; raises _Stopped when the switch stops."""
        while len(self._buffer) < size:
            if self._stop is not None:
                ready, _, _ = select.select([self._fd], [], [], _POLL_S)
                if self._stop.is_set():
                    raise _Stopped
                if not ready:
                    continue
            chunk = os.read(self._fd, 65536)
            if not chunk:
                break
            self._buffer += chunk
        data, self._buffer = self._buffer[:size], self._buffer[size:]
        return data

    def _read_header(self) -> tuple[struct.Struct, int]:
        header = self._read_exact(_GLOBAL_HEADER_SIZE)
        if len(header) < _GLOBAL_HEADER_SIZE:
            raise PcapError(f"--use-files: {self.in_path}: too short for a pcap header")
        (magic,) = struct.unpack("<I", header[:4])
        formats = {_MAGIC_LE: ("<", 1_000_000), _MAGIC_BE: (">", 1_000_000),
                   _MAGIC_NS_LE: ("<", 1_000_000_000), _MAGIC_NS_BE: (">", 1_000_000_000)}
        if magic not in formats:
            raise PcapError(f"--use-files: {self.in_path}: not a pcap file (magic 0x{magic:08x})")
        order, divisor = formats[magic]
        return struct.Struct(order + "IIII"), divisor

    def next_record(self, stop: threading.Event) -> PcapRecord | None:
        """The next input record, waiting for it if the writer has not written it yet; None at
        the end of the input. Raises _Stopped when `stop` is set while waiting."""
        self._stop = stop
        raw = self._read_exact(self._record.size)
        if not raw:
            return None
        if len(raw) < self._record.size:
            raise PcapError(f"--use-files: {self.in_path}: truncated record header")
        seconds, fraction, caplen, length = self._record.unpack(raw)
        data = self._read_exact(caplen)
        if len(data) < caplen:
            raise PcapError(f"--use-files: {self.in_path}: truncated record data")
        if caplen != length:
            raise PcapError(f"--use-files: {self.in_path}: incompletely captured packet")
        return PcapRecord(seconds + fraction / self._divisor, data)

    def send(self, frame: bytes) -> None:
        with self._lock:
            self.writer.write(frame)

    def close(self) -> None:
        with self._lock:
            self.writer.close()
        try:
            os.close(self._fd)
        except OSError:
            pass


def replay_files(ports: dict[int, FilePort], wait: int, stop: threading.Event,
                 ingress: Callable[[int, bytes], None], log: SwitchLog) -> None:
    """BMv2's PcapFilesReader as simple_switch runs it (no real-time replay): after `wait` s
    feed the earliest pending record of all inputs at once, until every input ends or `stop`
    is set."""
    if stop.wait(wait):
        return
    pending: dict[int, PcapRecord] = {}
    count = 0
    try:
        for port, io in sorted(ports.items()):
            record = io.next_record(stop)
            if record is not None:
                pending[port] = record
        while pending:
            port = min(pending, key=lambda p: (pending[p].timestamp, p))
            if stop.is_set():
                return
            ingress(port, pending[port].data)
            count += 1
            following = ports[port].next_record(stop)
            if following is None:
                del pending[port]
            else:
                pending[port] = following
    except _Stopped:
        return
    except PcapError as exc:
        log.error(str(exc))
        return
    log.info(f"--use-files: all {count} input packet(s) processed")
