"""Scapy layers for everything gradlane hosts put on the wire, bound so rdpcap/sniff dissect it.

`GradientHeader` follows docs/contracts.md field by field (names match p4src `gradient_t`) and
is bound to UDP port 19527 (source or destination). DATA, ACK, BITMAP and HELLO payloads have their
own layers; PROBE, STOP, PULL_REQ, PCN_START and PCN_ACK are the header alone (PCN's bits live in the
IPv4 TOS byte). `hosts.wire` builds the same bytes with precompiled structs for the hot path.
"""
from __future__ import annotations

from scapy.fields import (BitEnumField, BitField, ByteField, FieldListField, FlagsField,
                          IEEEFloatField, IntField, PacketListField, ShortField, StrField)
from scapy.layers.inet import UDP
from scapy.packet import Packet, bind_layers

from hosts import wire

_FLAG_NAMES = ["PULL", "DROPPABLE", "RETX", "LAST", "CRITICAL", "PLAIN", "F6", "F7"]


class GradientHeader(Packet):
    """The 32-byte gradient header after UDP (port 19527)."""

    name = "GradientHeader"
    fields_desc = [
        BitField("version", wire.VERSION, 4),
        BitEnumField("kind", wire.KIND_DATA, 4, wire.KIND_NAMES),
        FlagsField("flags", 0, 8, _FLAG_NAMES),
        ShortField("job_id", 0),
        ShortField("worker_rank", 0),
        ShortField("layer_id", 0),
        IntField("round", 0),
        ByteField("mag_class", 0),
        ByteField("policy_epoch", 0),
        ShortField("payload_len", None),
        IntField("chunk_seq", 0),
        IntField("elem_offset", 0),
        ShortField("tele_max_qdepth", 0),
        ShortField("tele_hops", 0),
        IntField("tele_qdelay_us", 0),
    ]

    def post_build(self, pkt: bytes, pay: bytes) -> bytes:
        if self.payload_len is None:
            n = len(pay)
            pkt = pkt[:14] + n.to_bytes(2, "big") + pkt[16:]
        return pkt + pay

    def extract_padding(self, s: bytes) -> tuple[bytes, bytes]:
        n = self.payload_len if self.payload_len is not None else len(s)
        return s[:n], s[n:]

    def mysummary(self) -> str:
        return self.sprintf("GL %kind% job=%job_id% rank=%worker_rank% round=%round% "
                            "layer=%layer_id% seq=%chunk_seq%")


class GradData(Packet):
    """DATA payload: big-endian float32 values starting at the header's elem_offset."""

    name = "GradData"
    fields_desc = [FieldListField("values", [], IEEEFloatField("v", 0.0))]


class GradAckEntry(Packet):
    """One acknowledged chunk."""

    name = "GradAckEntry"
    fields_desc = [ShortField("layer_id", 0), ShortField("reserved", 0), IntField("chunk_seq", 0)]

    def extract_padding(self, s: bytes) -> tuple[bytes, bytes]:
        return b"", s


class GradAck(Packet):
    """ACK payload: out-of-order list of received chunks."""

    name = "GradAck"
    fields_desc = [PacketListField("entries", [], GradAckEntry)]


class GradHello(Packet):
    """HELLO / HELLO_ACK payload: the join handshake's step (1..4) and that step's nonces,
    fingerprint and MAC (hosts/exchange/join.py)."""

    name = "GradHello"
    fields_desc = [ByteField("step", 1), StrField("body", b"")]


class GradBitmap(Packet):
    """BITMAP payload: bit i (LSB first in each byte) = chunk chunk_seq + i of layer_id arrived
    (a window of 8 x payload_len chunks, cut at the layer's end)."""

    name = "GradBitmap"
    fields_desc = [StrField("bitmap", b"")]


bind_layers(UDP, GradientHeader, dport=wire.GRADLANE_UDP_PORT)
bind_layers(UDP, GradientHeader, sport=wire.GRADLANE_UDP_PORT)
bind_layers(GradientHeader, GradData, kind=wire.KIND_DATA)
bind_layers(GradientHeader, GradAck, kind=wire.KIND_ACK)
bind_layers(GradientHeader, GradBitmap, kind=wire.KIND_BITMAP)
bind_layers(GradientHeader, GradHello, kind=wire.KIND_HELLO)
bind_layers(GradientHeader, GradHello, kind=wire.KIND_HELLO_ACK)
