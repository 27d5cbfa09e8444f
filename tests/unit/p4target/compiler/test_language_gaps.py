"""Language corners the compiler once refused or got wrong: casts to a typedef'd type in
constant expressions, the don't-care `_` as an argument, compound assignments whose target
calls a function (evaluated once)."""
from __future__ import annotations

import pytest

from p4target.compiler import compile_text
from p4target.engine import Engine
from p4target.errors import CompileError

BLOCKS = """
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def _run(src: str, packet: bytes) -> bytes:
    engine = Engine(compile_text("#include <core.p4>\n#include <v1model.p4>\n" + src, "gap.p4").bmv2_json)
    (port, out), = engine.process(0, packet)
    assert port == 1
    return out


def test_casts_to_typedef_types_wrap_in_constant_expressions() -> None:
    out = _run("""
typedef bit<8> byte_t;
typedef byte_t octet_t;
type bit<8> tag_t;
const byte_t B = 0xf0;
const bit<16> WRAPPED = (bit<16>)((byte_t)0xff + 1);
const bit<16> SHIFTED = (bit<16>)((octet_t)0x80 << 1);
const bit<16> FROM_CONST = (bit<16>)(B + 0x20);
const bit<16> NEW_TYPE = (bit<16>)(bit<8>)((tag_t)0xfe + (tag_t)3);
const bit<16> SATURATED = (bit<16>)((byte_t)0xf0 |+| 0x20);
header h_t { bit<16> a; bit<16> b; bit<16> c; bit<16> d; bit<16> e; }
struct headers_t { h_t h; }
struct meta_t { }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        hdr.h.a = WRAPPED; hdr.h.b = SHIFTED; hdr.h.c = FROM_CONST; hdr.h.d = NEW_TYPE; hdr.h.e = SATURATED;
    }
}
""" + BLOCKS, bytes(10))
    assert out.hex() == "0000" + "0000" + "0010" + "0001" + "00ff"


DONT_CARE = """
header h_t { bit<8> a; bit<8> b; bit<8> c; }
struct headers_t { h_t h; }
struct meta_t { bit<8> m; }
void both(out bit<8> x, out bit<8> y) { x = 7; y = 9; }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    register<bit<8>>(4) r;
    action two(out bit<8> x, out bit<8> y) { x = 1; y = 2; }
    action keep(inout bit<8> x) { x = x + 1; }
    apply {
        sm.egress_spec = 1;
        two(_, hdr.h.c);
        both(x = _, y = hdr.h.b);
        keep(_);
        r.read(_, 0);
    }
}
"""


def test_dont_care_arguments_are_written_nowhere() -> None:
    assert _run(DONT_CARE + BLOCKS, bytes([0xaa, 0xbb, 0xcc])) == bytes([0xaa, 9, 2])


def test_dont_care_for_an_extern_out_of_unknown_type_is_a_clear_error() -> None:
    src = DONT_CARE.replace("r.read(_, 0);", "random(_, 8w0, 8w7);")
    with pytest.raises(CompileError, match="type of '_' cannot be inferred"):
        compile_text("#include <core.p4>\n#include <v1model.p4>\n" + src + BLOCKS, "gap.p4")


def test_compound_assignment_evaluates_a_target_with_a_call_once() -> None:
    out = _run("""
header h_t { bit<8> a; bit<8> b; }
struct headers_t { h_t[3] s; h_t h; }
struct meta_t { bit<8> calls; }
bit<32> next_index(inout bit<8> calls) { calls = calls + 1; return (bit<32>)calls; }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        meta.calls = 0;
        hdr.s[next_index(meta.calls)].a += 0x10;
        hdr.s[next_index(meta.calls)].b |+|= 0xf0;
        hdr.h.a = meta.calls;
    }
}
""" + BLOCKS.replace("pkt.extract(hdr.h);", "pkt.extract(hdr.s.next); pkt.extract(hdr.s.next); "
                     "pkt.extract(hdr.s.next); pkt.extract(hdr.h);").replace(
        "pkt.emit(hdr.h);", "pkt.emit(hdr.s); pkt.emit(hdr.h);"),
        bytes([1, 2, 3, 4, 5, 0x20, 0, 0]))
    # one call per statement: s[1].a += 0x10, s[2].b saturates at 0xff, two calls in all
    assert out == bytes([1, 2, 0x13, 4, 5, 0xff, 2, 0])


def test_slices_of_typedef_constants_are_constants() -> None:
    out = _run("""
typedef bit<32> word_t;
const word_t PREFIX = 0x8c000000;
header h_t { bit<8> a; bit<8> b; }
struct headers_t { h_t h; }
struct meta_t { }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { sm.egress_spec = 1; hdr.h.b = (bit<8>)PREFIX[31:24]; }
}
""" + BLOCKS.replace("pkt.extract(hdr.h); transition accept;",
                     "pkt.extract(hdr.h); transition select(hdr.h.a[7:7]) { PREFIX[31:31]: accept; "
                     "default: reject; }"), bytes([0x80, 0]))
    assert out == bytes([0x80, 0x8c])


def test_extract_into_dont_care_skips_the_header() -> None:
    out = _run("""
header h_t { bit<8> a; bit<8> b; }
struct headers_t { h_t h; }
struct meta_t { }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { sm.egress_spec = 1; }
}
""" + BLOCKS.replace("pkt.extract(hdr.h);", "pkt.extract<h_t>(_); pkt.extract(hdr.h);"), bytes([1, 2, 3, 4]))
    assert out == bytes([3, 4])  # the first two bytes were extracted into the scratch header


def test_dont_care_on_a_range_key_matches_every_value() -> None:
    """`_` on a range key is the whole range (p4c 1.2.5.16 writes 0 .. 0; const_entries.p4 spells
    the range out for it, so the don't-care is checked here)."""
    src = """
header h_t { bit<8> a; bit<32> d; }
struct headers_t { h_t h; }
struct meta_t { }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action set_a(bit<8> v) { hdr.h.a = v; }
    table t {
        key = { hdr.h.d : range; }
        actions = { set_a; NoAction; }
        const entries = { 32w5 .. 32w6 : set_a(1); _ : set_a(2); }
        default_action = NoAction();
    }
    apply { sm.egress_spec = 1; t.apply(); }
}
""" + BLOCKS
    for d, a in ((5, 1), (0, 2), (11, 2), (0xFFFFFFFF, 2)):
        assert _run(src, bytes([0]) + d.to_bytes(4, "big"))[0] == a
