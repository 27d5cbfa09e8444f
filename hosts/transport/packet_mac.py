"""--packet-mac: a 16-byte HMAC-SHA256 trailer on every datagram of a job, under a key derived
from the job's secret, so that a packet with a bound peer's spoofed source address is dropped.

The trailer follows the UDP payload outside payload_len, so switches parse the header as
always. The MAC covers the whole datagram except the three telemetry fields, which switches
rewrite on the way (tele_max_qdepth, tele_hops, tele_qdelay_us: header bytes 24..31). It adds
16 to 23% to today's per-packet processing (benchmarks/join_auth.py), hence an option.
"""
from __future__ import annotations

import hashlib
import hmac

from hosts import wire

TAG_BYTES = 16
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
