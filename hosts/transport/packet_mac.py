"""--packet-mac: a 16-byte HMAC-SHA256 trailer on a job's datagrams, under a key derived from
the job's secret, so that a packet with a bound peer's spoofed source address is dropped.

Which datagrams carry it is the mode: `control` (the default of the UDP transports) signs every
kind but DATA: STOP, PULL_REQ, PROBE, BITMAP, ACK, EPOCH, the join and PCN's, the few packets
per round that steer it; `all` signs DATA too (+6% per round over `control` with the native
MAC, +21% per round with this Python one: benchmarks/join_auth.py, docs/security.md); `off` none.
This module is the reference; hosts/transport/mac_impl.py picks the code that computes it
(native/packet_mac.cpp where built, which gives the same tags). The receiver reads the kind from the header and requires
a valid trailer on every kind its mode signs, so relabelling a control packet as DATA makes it
DATA, subject to DATA's checks (the round and window the receiver expects).

The trailer follows the UDP payload outside payload_len, so switches parse the header as
always. The MAC covers the whole datagram except the three telemetry fields, which switches
rewrite on the way (tele_max_qdepth, tele_hops, tele_qdelay_us: header bytes 24..31).
"""
from __future__ import annotations

import hashlib
import hmac

from hosts import wire

TAG_BYTES = 16
MODES = ("off", "control", "all")
DEFAULT_MODE = "control"
_TELEMETRY = slice(24, wire.HEADER_LEN)
_LABEL = b"gradlane-packet-mac-v1"


def packet_key(job_key: bytes) -> bytes:
    """The per-packet key of a job (apart from the join's use of the job key)."""
    return hmac.digest(job_key, _LABEL, hashlib.sha256)


def _covered(datagram: bytes) -> bytes:
    return datagram[:_TELEMETRY.start] + datagram[_TELEMETRY.stop:]


def sign(key: bytes, datagram: bytes) -> bytes:
    """`datagram` with its trailer."""
    return datagram + hmac.digest(key, _covered(datagram), hashlib.sha256)[:TAG_BYTES]


def verify(key: bytes, data: bytes) -> bytes | None:
    """The datagram without its trailer, or None when the trailer is missing or wrong."""
    if len(data) < wire.HEADER_LEN + TAG_BYTES:
        return None
    datagram, tag = data[:-TAG_BYTES], data[-TAG_BYTES:]
    want = hmac.digest(key, _covered(datagram), hashlib.sha256)[:TAG_BYTES]
    return datagram if hmac.compare_digest(tag, want) else None


def kind_of(datagram: bytes) -> int:
    """The gradlane kind in a datagram's first byte (its low nibble)."""
    return datagram[0] & 0xF if datagram else -1


def signs(mode: str, kind: int) -> bool:
    """True when a datagram of ``kind`` carries the trailer under ``mode``."""
    return mode == "all" or (mode == "control" and kind != wire.KIND_DATA)
