"""Bytestrings, controller-header packing and P4Info/engine translation without gRPC."""
import pytest
from p4.v1 import p4runtime_pb2

from p4target.engine import Engine, Range, Ternary
from p4target.switch.p4runtime import P4RuntimeError
from p4target.switch.p4runtime.bytestrings import decode, encode, pack_fields, unpack_fields
from p4target.switch.p4runtime.packet_io import frame_from_packet_out, packet_in_from_frame
from p4target.switch.p4runtime.translate import BMV2_MAX_PRIORITY, ControllerHeader, Translator


def test_bytestrings_are_canonical_out_and_checked_in():
    assert [encode(v) for v in (0, 1, 0x100, 0x1FF)] == [b"\x00", b"\x01", b"\x01\x00", b"\x01\xff"]
    assert decode(b"\x00\x05", 9, "x") == 5  # leading zero within the field's two bytes
    for data, width in ((b"", 8), (b"\x02\x00", 9), (b"\x00\x00\x01", 9), (b"\x01", 0)):
        with pytest.raises(P4RuntimeError) as e:
            decode(data, width, "field f")
        assert e.value.code.name == "INVALID_ARGUMENT" and "field f" in e.value.message


def test_bit_packing_of_unaligned_fields():
    assert pack_fields([(5, 9), (0, 7)]) == b"\x02\x80"
    assert pack_fields([(1, 1), (3, 2)]) == b"\xe0"  # 3 bits, zero-padded to a byte
    assert unpack_fields(b"\x02\x80rest", [9, 7]) == ([5, 0], b"rest")
    with pytest.raises(ValueError):
        unpack_fields(b"\x02", [9, 7])


def test_packet_io_without_and_with_controller_header():
    out = p4runtime_pb2.PacketOut(payload=b"abc")
    assert frame_from_packet_out(None, out) == b"abc"
    out.metadata.add(metadata_id=1, value=b"\x01")
    with pytest.raises(P4RuntimeError):
        frame_from_packet_out(None, out)
    hdr = ControllerHeader("packet_out", [(1, "port", 9), (2, "pad", 7)])
    assert frame_from_packet_out(hdr, out) == b"\x00\x80abc"
    pin = packet_in_from_frame(ControllerHeader("packet_in", [(1, "port", 9), (2, "pad", 7)]), b"\x01\x80xyz")
    assert pin.payload == b"xyz" and [(m.metadata_id, m.value) for m in pin.metadata] == [(1, b"\x03"), (2, b"\x00")]


def test_translator_round_trips_keys_and_maps_priorities(program, ids):
    bmv2, p4info = program
    tr = Translator(p4info, Engine(bmv2))
    table = tr.table(ids.table("MyIngress.t_tern"))
    te = ids.entry("MyIngress.t_tern", [("hdr.h.c", "range", 2, 9)], priority=3)
    key = tr.key_to_engine(table, te.match)
    assert key == [Ternary(0, 0), Range(2, 9), Ternary(0, 0)]   # OPTIONAL on a "ternary" JSON key
    back = p4runtime_pb2.TableEntry()
    tr.key_from_engine(table, tuple(key), back.match)
    assert list(back.match) == list(te.match)
    assert tr.priority_to_engine(table, 3) == BMV2_MAX_PRIORITY - 3
    assert tr.priority_from_engine(table, BMV2_MAX_PRIORITY - 3) == 3
    with pytest.raises(P4RuntimeError):
        tr.table(12345)


def test_translator_rejects_p4info_that_does_not_match_the_json(program, ids):
    bmv2, p4info = program
    bad = type(p4info)()
    bad.CopyFrom(p4info)
    bad.actions[2].params.add(id=9, name="extra", bitwidth=8)
    with pytest.raises(P4RuntimeError) as e:
        Translator(bad, Engine(bmv2))
    assert "parameter" in e.value.message
