"""Header decoding errors, PCN and DSCP/ECN TOS encodings, control payloads."""
import pytest

from hosts import wire
from hosts.errors import PacketError


def test_unpack_rejects_truncated_and_corrupt():
    good = wire.pack_header(wire.KIND_DATA, 0, 1, 0, 0, 0, payload_len=8) + b"\0" * 8
    assert wire.unpack_header(good).payload_len == 8
    with pytest.raises(PacketError) as e:
        wire.unpack_header(good[:20])
    assert e.value.reason == "truncated"
    with pytest.raises(PacketError) as e:
        wire.unpack_header(good[:-1])
    assert e.value.reason == "truncated"
    with pytest.raises(PacketError) as e:
        wire.unpack_header(good + b"x")
    assert e.value.reason == "corrupt"
    bad_version = bytes([0x20 | wire.KIND_DATA]) + good[1:]
    with pytest.raises(PacketError) as e:
        wire.unpack_header(bad_version)
    assert e.value.reason == "corrupt"


def test_an_observer_reads_the_header_of_a_signed_datagram():
    # a receiver refuses bytes after the payload; a relay or capture sees a MAC trailer there
    signed = wire.pack_header(wire.KIND_STOP, wire.FLAG_PULL, 1, 0, 0, 7, payload_len=4) + b"\0" * 4 + b"t" * 16
    hdr = wire.header_of(signed)
    assert (hdr.kind, hdr.round, hdr.payload_len) == (wire.KIND_STOP, 7, 4)
    with pytest.raises(PacketError) as e:
        wire.header_of(signed[:30])
    assert e.value.reason == "truncated"
    with pytest.raises(PacketError) as e:
        wire.header_of(signed[:34])     # shorter than its payload
    assert e.value.reason == "truncated"


def test_pcn_tos_bits():
    assert wire.pcn_tos(start=True, threshold=10) == 0x80 | (2 << 2) | wire.ECN_ECT0
    assert wire.pcn_tos(ack=True, ecn=wire.ECN_NOT_ECT) == 0x40
    assert wire.decode_pcn_tos(wire.pcn_tos(start=True, threshold=75)) == (True, False, 75, 2)
    with pytest.raises(ValueError):
        wire.pcn_tos(threshold=12)
    with pytest.raises(ValueError):
        wire.pcn_tos(threshold=80)


def test_data_tos_marks_drop_eligibility_in_ecn_and_never_looks_like_pcn():
    for cls in range(8):
        droppable = wire.data_tos(cls, True)
        kept = wire.data_tos(cls, False)
        assert droppable & 3 == wire.ECN_NOT_ECT
        assert kept & 3 == wire.ECN_ECT0
        assert (droppable >> 2) == 8 + cls
        start, ack, _, _ = wire.decode_pcn_tos(kept)
        assert not start and not ack


def test_control_payload_errors():
    with pytest.raises(PacketError):
        wire.unpack_ack_entries(b"\0" * 7)
    with pytest.raises(PacketError):
        wire.unpack_bitmap(b"\xff", 9)
    assert list(wire.unpack_bitmap(wire.pack_bitmap([True] * 9), 9)) == [True] * 9
