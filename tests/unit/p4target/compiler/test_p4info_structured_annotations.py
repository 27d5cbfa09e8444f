"""P4_16 structured annotations (``@name[...]``) in P4Info, and which actions P4Info lists:
both as the real p4c (1.2.x, p4c-bm2-ss) writes them for the same programs."""
from __future__ import annotations

import pytest
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

from p4target.compiler import compile_text
from p4target.errors import CompileError
from support.p4info_index import P4InfoIndex

_PROGRAM = """
#include <core.p4>
#include <v1model.p4>
const int DEPTH = 3;
const bool STRICT = false;
const bit<8> SIZED = 1;
header h_t { bit<8> a; bit<8> b; }
@controller_header("packet_in") header packet_in_t { @padding bit<7> pad; @Port[sdn="port"] bit<9> port; }
struct headers_t { h_t h; packet_in_t pin; }
struct meta_t { bit<8> m; }
parser P(packet_in pk, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t m) { apply { } }
control I(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    @Tally[1, "two", true, 3 + 4, -5] counter(8, CounterType.packets) c1;
    @Rate[unit="bytes", burst=2, strict=STRICT] meter(8, MeterType.bytes) m1;
    @Store[depth = DEPTH * 2,] register<bit<8>>(4) r1;
    @SaiAction[api="x"] action set_a(@SaiVal[type="sai_uint8_t"] bit<8> p) { hdr.h.a = p; }
    action unused_plain(bit<8> p) { hdr.h.b = p; }
    @SaiAction[api="y"] action unused_structured() { hdr.h.b = 1; }
    @id(0x01000099) action unused_with_id() { hdr.h.b = 2; }
    @Marker[] action called_directly() { hdr.h.b = 3; }
    @hidden action hidden_call() { hdr.h.b = 4; }
    action inner() { hdr.h.b = 5; }
    action outer() { inner(); }
    action in_dead_branch() { hdr.h.b = 6; }
    @SaiTable[name="t", api="acl"] table t {
        key = { hdr.h.a : exact @SaiVal[type="sai_uint8_t"] @format(HEX_STR) @name("a"); }
        actions = { @proto_id(1) @Ref[rank=1] set_a; @proto_id(3) @defaultonly NoAction; }
        default_action = NoAction();
    }
    apply {
        t.apply();
        called_directly();
        hidden_call();
        outer();
        c1.count(0);
        if (8w1 == 8w2) { in_dead_branch(); }
    }
}
control E(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t m) { apply { } }
control D(packet_out pk, in headers_t hdr) { apply { pk.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def _structured(annotations) -> list[str]:
    return [text_format.MessageToString(a, as_one_line=True) for a in annotations]


@pytest.fixture(scope="module")
def p4info() -> p4info_pb2.P4Info:
    return compile_text(_PROGRAM, "structured.p4").p4info


def test_kv_lists_on_tables_match_fields_actions_and_params(p4info) -> None:
    idx = P4InfoIndex(p4info)
    table = idx.table("I.t")
    assert _structured(table.preamble.structured_annotations) == [
        'name: "SaiTable" kv_pair_list { kv_pairs { key: "name" value { string_value: "t" } } '
        'kv_pairs { key: "api" value { string_value: "acl" } } }']
    key, = table.match_fields
    # the unstructured annotation stays a string; @name is consumed
    assert list(key.annotations) == ["@format(HEX_STR)"]
    assert _structured(key.structured_annotations) == [
        'name: "SaiVal" kv_pair_list { kv_pairs { key: "type" value { string_value: "sai_uint8_t" } } }']
    action = idx.action("I.set_a")
    assert _structured(action.preamble.structured_annotations) == [
        'name: "SaiAction" kv_pair_list { kv_pairs { key: "api" value { string_value: "x" } } }']
    param, = action.params
    assert _structured(param.structured_annotations) == [
        'name: "SaiVal" kv_pair_list { kv_pairs { key: "type" value { string_value: "sai_uint8_t" } } }']


def test_action_references_and_packet_io_fields_keep_their_annotations(p4info) -> None:
    idx = P4InfoIndex(p4info)
    set_a, no_action = idx.table("I.t").action_refs
    assert list(set_a.annotations) == ["@proto_id(1)"]
    assert _structured(set_a.structured_annotations) == [
        'name: "Ref" kv_pair_list { kv_pairs { key: "rank" value { int64_value: 1 } } }']
    # in source order, @defaultonly where it was written
    assert list(no_action.annotations) == ["@proto_id(3)", "@defaultonly"]
    assert no_action.scope == p4info_pb2.ActionRef.DEFAULT_ONLY
    pad, port = p4info.controller_packet_metadata[0].metadata
    assert list(pad.annotations) == ["@padding"]
    assert _structured(port.structured_annotations) == [
        'name: "Port" kv_pair_list { kv_pairs { key: "sdn" value { string_value: "port" } } }']


def test_expression_lists_are_evaluated_and_typed(p4info) -> None:
    idx = P4InfoIndex(p4info)
    assert _structured(idx.get("counters", "I.c1").preamble.structured_annotations) == [
        'name: "Tally" expression_list { expressions { int64_value: 1 } expressions { string_value: "two" } '
        'expressions { bool_value: true } expressions { int64_value: 7 } expressions { int64_value: -5 } }']
    assert _structured(idx.get("meters", "I.m1").preamble.structured_annotations) == [
        'name: "Rate" kv_pair_list { kv_pairs { key: "unit" value { string_value: "bytes" } } '
        'kv_pairs { key: "burst" value { int64_value: 2 } } kv_pairs { key: "strict" value { bool_value: false } } }']
    assert _structured(idx.get("registers", "I.r1").preamble.structured_annotations) == [
        'name: "Store" kv_pair_list { kv_pairs { key: "depth" value { int64_value: 6 } } }']
    # an empty list gives the name alone
    assert _structured(idx.action("I.called_directly").preamble.structured_annotations) == ['name: "Marker"']
    # none of them leaks into the string annotations
    assert not any(a.startswith("@") and "[" in a for e in (*p4info.tables, *p4info.actions)
                   for a in e.preamble.annotations)


def test_p4info_lists_only_the_actions_a_table_or_an_apply_block_uses(p4info) -> None:
    # unused ones (annotated or not, with an @id or not), @hidden ones, one only another
    # action calls and one in a branch that is never taken are left out, as p4c does
    assert sorted(a.preamble.name for a in p4info.actions) == [
        "I.called_directly", "I.outer", "I.set_a", "NoAction"]


@pytest.mark.parametrize("annotation,message", [
    ("@Bad[8w9]", "must be a compile-time known int, string or bool"),
    ("@Bad[x = hdr.h.a]", "must be a compile-time known int, string or bool"),
    ("@Bad[SIZED]", "must be a compile-time known int, string or bool"),  # bit<8>, not int
    ("@Bad[k = 1, 2]", "mixes key = value pairs and plain expressions"),
    ("@Bad[k = 1, k = 2]", "duplicate key 'k'"),
])
def test_bad_structured_annotations_are_refused(annotation: str, message: str) -> None:
    src = _PROGRAM.replace('@SaiTable[name="t", api="acl"] table t', f"{annotation} table t")
    with pytest.raises(CompileError, match=message):
        compile_text(src, "bad.p4")
