"""Controller packet headers: PacketOut metadata -> bit-packed `packet_out` header in front of
the payload (as the P4 parser expects it on the CPU port); CPU-port frames -> PacketIn."""
from __future__ import annotations

from p4.v1 import p4runtime_pb2

from . import bytestrings
from .errors import invalid
from .translate import ControllerHeader


def frame_from_packet_out(header: ControllerHeader | None, msg: p4runtime_pb2.PacketOut) -> bytes:
    """Serialize the packet_out header (missing fields are 0) followed by the payload."""
    if header is None:
        if msg.metadata:
            raise invalid("the P4Info declares no packet_out controller header")
        return msg.payload
    values = {mid: 0 for mid, _, _ in header.fields}
    widths = {mid: (name, width) for mid, name, width in header.fields}
    for md in msg.metadata:
        if md.metadata_id not in widths:
            raise invalid(f"packet_out has no metadata id {md.metadata_id}")
        name, width = widths[md.metadata_id]
        values[md.metadata_id] = bytestrings.decode(md.value, width, f"packet_out metadata '{name}'")
    return bytestrings.pack_fields([(values[mid], width) for mid, _, width in header.fields]) + msg.payload


def packet_in_from_frame(header: ControllerHeader | None, frame: bytes) -> p4runtime_pb2.PacketIn:
    """Split the packet_in header off a CPU-port frame into PacketIn metadata."""
    if header is None:
        return p4runtime_pb2.PacketIn(payload=frame)
    values, payload = bytestrings.unpack_fields(frame, [w for _, _, w in header.fields])
    msg = p4runtime_pb2.PacketIn(payload=payload)
    for (mid, _, _), value in zip(header.fields, values):
        msg.metadata.add(metadata_id=mid, value=bytestrings.encode(value))
    return msg
