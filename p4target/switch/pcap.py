"""Classic libpcap files (Ethernet link type, microsecond timestamps), as BMv2 writes with --pcap."""
from __future__ import annotations

import struct
import time
from dataclasses import dataclass
from typing import BinaryIO, Iterator

from p4target.switch.errors import PcapError

MAGIC_USEC = 0xA1B2C3D4
LINKTYPE_ETHERNET = 1
SNAPLEN = 65535
_GLOBAL_HEADER = struct.Struct("<IHHiIII")
_RECORD_HEADER = struct.Struct("<IIII")


@dataclass(frozen=True)
class PcapRecord:
    """One captured frame and its capture time in seconds since the epoch."""

    timestamp: float
    data: bytes


class PcapWriter:
    """Appends frames to a new pcap file; flushes after every frame so readers see it at once."""

    def __init__(self, path: str) -> None:
        self._file: BinaryIO = open(path, "wb")
        self._file.write(_GLOBAL_HEADER.pack(MAGIC_USEC, 2, 4, 0, 0, SNAPLEN, LINKTYPE_ETHERNET))
        self._file.flush()

    def write(self, data: bytes, timestamp: float | None = None) -> None:
        """Record one frame (truncated to the snap length) at `timestamp` (default: now)."""
        when = time.time() if timestamp is None else timestamp
        seconds = int(when)
        micros = min(int(round((when - seconds) * 1_000_000)), 999_999)
        kept = data[:SNAPLEN]
        self._file.write(_RECORD_HEADER.pack(seconds, micros, len(kept), len(data)) + kept)
        self._file.flush()

    def close(self) -> None:
        """Close the file; further writes raise ValueError."""
        self._file.close()

    def __enter__(self) -> "PcapWriter":
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def read_pcap(path: str) -> Iterator[PcapRecord]:
    """Yield the records of a pcap file (either byte order); PcapError if it is not one."""
    with open(path, "rb") as handle:
        header = handle.read(_GLOBAL_HEADER.size)
        if len(header) < _GLOBAL_HEADER.size:
            raise PcapError(f"{path}: too short for a pcap header")
        (magic,) = struct.unpack("<I", header[:4])
        if magic == MAGIC_USEC:
            order = "<"
        elif magic == 0xD4C3B2A1:
            order = ">"
        else:
            raise PcapError(f"{path}: not a pcap file (magic 0x{magic:08x})")
        record = struct.Struct(order + "IIII")
        while True:
            raw = handle.read(record.size)
            if not raw:
                return
            if len(raw) < record.size:
                raise PcapError(f"{path}: truncated record header")
            seconds, micros, caplen, _origlen = record.unpack(raw)
            data = handle.read(caplen)
            if len(data) < caplen:
                raise PcapError(f"{path}: truncated record data")
            yield PcapRecord(seconds + micros / 1_000_000, data)
