"""Gradient header wire format (docs/contracts.md) as precompiled structs: the hot path.

`hosts.headers` defines the same header as a Scapy layer; tests prove both produce the same bytes.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

from hosts.errors import PacketError

GRADLANE_UDP_PORT = 19527
VERSION = 1
HEADER_LEN = 32
PS_RANK = 0xFFFF
ALL_LAYERS = 0xFFFF

# kinds (contracts: 0..5 fixed; hosts define >= 6)
KIND_DATA = 0
KIND_ACK = 1
KIND_PROBE = 2
KIND_BITMAP = 3
KIND_STOP = 4
KIND_PULL_REQ = 5
KIND_PCN_START = 6
KIND_PCN_ACK = 7
KIND_HELLO = 8        # worker -> PS: the join handshake (hosts/exchange/join.py)
KIND_HELLO_ACK = 9    # PS -> worker: its answers in the join handshake
KIND_EPOCH = 12       # PS -> worker: round R follows policy epoch chunk_seq
KIND_NAMES = {KIND_DATA: "DATA", KIND_ACK: "ACK", KIND_PROBE: "PROBE", KIND_BITMAP: "BITMAP",
              KIND_STOP: "STOP", KIND_PULL_REQ: "PULL_REQ", KIND_PCN_START: "PCN_START",
              KIND_PCN_ACK: "PCN_ACK", KIND_HELLO: "HELLO", KIND_HELLO_ACK: "HELLO_ACK",
              KIND_EPOCH: "EPOCH"}

FLAG_PULL = 0x01
FLAG_DROPPABLE = 0x02
FLAG_RETX = 0x04
FLAG_LAST = 0x08
FLAG_CRITICAL = 0x10
# No network assistance: switches treat the packet as ordinary traffic (no gradient
# classification, priority or loss budget; per-flow hashing). The MLT baseline sets it.
FLAG_PLAIN = 0x20
# The sender can send no more until this DATA is acknowledged (its window is full, or its pass
# or resend ended): the receiver acknowledges at once instead of holding the ACK (hosts only).
FLAG_ACK_NOW = 0x40

# version/kind, flags, job, rank, layer, round, mag_class, policy_epoch, payload_len, chunk_seq,
# elem_offset, tele_max_qdepth, tele_hops, tele_qdelay_us
HEADER = struct.Struct("!BBHHHIBBHIIHHI")
assert HEADER.size == HEADER_LEN

ACK_ENTRY = struct.Struct("!HHI")  # layer_id, marks, chunk_seq
ACK_MARK_CE = 0x0001               # marks bit 0: the acknowledged DATA arrived CE-marked

# STOP: chunk_seq names why the receiver closed the transfer (0 = not said)
STOP_REASONS = {"bound": 1, "complete": 2, "deadline": 3}
STOP_REASON_NAMES = {v: k for k, v in STOP_REASONS.items()}
FLOAT_DTYPE = ">f4"                # DATA payload: big-endian float32


@dataclass(frozen=True, slots=True)
class Header:
    """A decoded gradient header (all 15 contract fields; version/kind split)."""

    kind: int
    flags: int
    job_id: int
    worker_rank: int
    layer_id: int
    round: int
    mag_class: int = 0
    payload_len: int = 0
    chunk_seq: int = 0
    elem_offset: int = 0
    tele_max_qdepth: int = 0
    tele_hops: int = 0
    tele_qdelay_us: int = 0
    version: int = VERSION
    policy_epoch: int = 0

    def pack(self) -> bytes:
        """The 32 header bytes."""
        return pack_header(self.kind, self.flags, self.job_id, self.worker_rank, self.layer_id,
                           self.round, self.mag_class, self.payload_len, self.chunk_seq,
                           self.elem_offset, self.tele_max_qdepth, self.tele_hops,
                           self.tele_qdelay_us, version=self.version,
                           policy_epoch=self.policy_epoch)


def pack_header(kind: int, flags: int, job_id: int, worker_rank: int, layer_id: int,
                round_: int, mag_class: int = 0, payload_len: int = 0, chunk_seq: int = 0,
                elem_offset: int = 0, tele_max_qdepth: int = 0, tele_hops: int = 0,
                tele_qdelay_us: int = 0, *, version: int = VERSION,
                policy_epoch: int = 0) -> bytes:
    """Pack one header with the precompiled struct (the per-packet fast path)."""
    return HEADER.pack((version << 4) | (kind & 0xF), flags, job_id, worker_rank, layer_id,
                       round_, mag_class, policy_epoch, payload_len, chunk_seq, elem_offset,
                       tele_max_qdepth, tele_hops, tele_qdelay_us)


def unpack_header(data: bytes | memoryview) -> Header:
    """Decode the header at the start of `data`; PacketError('truncated'|'corrupt') if bad."""
    if len(data) < HEADER_LEN:
        raise PacketError("truncated", f"{len(data)} bytes, header needs {HEADER_LEN}")
    (vk, flags, job, rank, layer, rnd, mag, epoch, plen, seq, off, qd, hops,
     qdelay) = HEADER.unpack_from(data)
    version = vk >> 4
    if version != VERSION:
        raise PacketError("corrupt", f"version {version}, expected {VERSION}")
    if len(data) - HEADER_LEN < plen:
        raise PacketError("truncated", f"payload_len {plen} but {len(data) - HEADER_LEN} bytes")
    if len(data) - HEADER_LEN > plen:
        raise PacketError("corrupt", f"payload_len {plen} but {len(data) - HEADER_LEN} bytes")
    return Header(vk & 0xF, flags, job, rank, layer, rnd, mag, plen, seq, off, qd, hops, qdelay,
                  version, epoch)


def header_of(datagram: bytes | memoryview) -> Header:
    """The header of a datagram as an observer on the path sees it (a relay, a capture): a
    signed datagram's MAC trailer after its payload is ignored. Receivers use Port.parse,
    which checks the trailer; PacketError as unpack_header when the datagram is too short."""
    if len(datagram) >= HEADER_LEN:
        plen = HEADER.unpack_from(datagram)[8]
        if len(datagram) >= HEADER_LEN + plen:
            return unpack_header(datagram[:HEADER_LEN + plen])
    return unpack_header(datagram)


# ---- PCN encoding in the IPv4 TOS byte: bit 7 START, bit 6 ACK, bits 5..2 threshold/5, 1..0 ECN
ECN_NOT_ECT = 0
ECN_ECT1 = 1
ECN_ECT0 = 2
ECN_CE = 3


def pcn_tos(start: bool = False, ack: bool = False, threshold: int = 0,
            ecn: int = ECN_ECT0) -> int:
    """TOS byte for a PCN packet; `threshold` in packets (0..75, multiple of 5; 0 = switch default)."""
    if not 0 <= threshold <= 75 or threshold % 5:
        raise ValueError(f"PCN threshold {threshold} is not a multiple of 5 in 0..75")
    return (int(start) << 7) | (int(ack) << 6) | ((threshold // 5) << 2) | (ecn & 3)


def decode_pcn_tos(tos: int) -> tuple[bool, bool, int, int]:
    """(start, ack, threshold packets, ecn) from a TOS byte."""
    return bool(tos & 0x80), bool(tos & 0x40), ((tos >> 2) & 0xF) * 5, tos & 3


def data_tos(mag_class: int, drop_eligible: bool) -> int:
    """TOS of a gradient DATA packet: DSCP 8 + mag_class (bits 7..6 stay 0 so no switch reads
    it as PCN START/ACK), ECN Not-ECT when drop-eligible else ECT(0)."""
    return ((8 + (mag_class & 7)) << 2) | (ECN_NOT_ECT if drop_eligible else ECN_ECT0)


# Control packets: DSCP 0b001111 (15, highest of our gradient range), ECT(0): never drop-eligible.
CONTROL_TOS = (15 << 2) | ECN_ECT0


# ---- control payloads --------------------------------------------------------------------------

def pack_ack_entries(entries: list[tuple[int, int]], ce: list[bool] | None = None) -> bytes:
    """ACK payload: (layer_id, chunk_seq) pairs, each 8 bytes (layer, marks, seq); `ce[i]` sets
    ACK_MARK_CE on entry i (its DATA arrived CE-marked)."""
    if ce is None:
        return b"".join(ACK_ENTRY.pack(layer, 0, seq) for layer, seq in entries)
    return b"".join(ACK_ENTRY.pack(layer, ACK_MARK_CE if m else 0, seq)
                    for (layer, seq), m in zip(entries, ce))


def unpack_ack_entries(payload: bytes | memoryview) -> list[tuple[int, int]]:
    """(layer_id, chunk_seq) pairs of an ACK payload; PacketError('corrupt') if misaligned."""
    if len(payload) % ACK_ENTRY.size:
        raise PacketError("corrupt", f"ACK payload of {len(payload)} bytes is not a multiple of 8")
    return [(layer, seq) for layer, _, seq in ACK_ENTRY.iter_unpack(payload)]


def unpack_ack_marks(payload: bytes | memoryview) -> list[tuple[int, int, bool]]:
    """(layer_id, chunk_seq, CE echoed) of every ACK entry; PacketError if misaligned."""
    if len(payload) % ACK_ENTRY.size:
        raise PacketError("corrupt", f"ACK payload of {len(payload)} bytes is not a multiple of 8")
    return [(layer, seq, bool(marks & ACK_MARK_CE))
            for layer, marks, seq in ACK_ENTRY.iter_unpack(payload)]


def pack_bitmap(bits: "np.ndarray | list[bool]") -> bytes:
    """BITMAP payload: bit i of the window's chunks (from the header's chunk_seq) in byte
    i // 8, least significant first."""
    return np.packbits(np.asarray(bits, dtype=bool), bitorder="little").tobytes()


def unpack_bitmap(payload: bytes | memoryview, count: int) -> np.ndarray:
    """The first `count` bits of a BITMAP payload as a bool array; PacketError if too short."""
    if len(payload) * 8 < count:
        raise PacketError("truncated", f"bitmap of {len(payload)} bytes for {count} chunks")
    raw = np.frombuffer(payload, dtype=np.uint8)
    return np.unpackbits(raw, count=count, bitorder="little").astype(bool)


# Largest DATA payload that fits payload_len (16 bits) and a 1500-byte MTU with IPv4/UDP/header.
MAX_DATA_PAYLOAD = 1500 - 20 - 8 - HEADER_LEN
