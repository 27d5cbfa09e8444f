"""The compiler's BMv2 JSON has the node shapes real BMv2's loader reads (`support.bmv2_shape`):
operations as primitive arguments wrapped once more as `expression` arguments, action data as
`local` inside expressions, `lookahead` only where BMv2 reads it."""
from __future__ import annotations

from pathlib import Path

import pytest

from p4target.compiler import compile_file, compile_text
from p4target.engine import Engine
from support.bmv2_shape import problems

ROOT = Path(__file__).resolve().parents[4]
PROGRAMS = sorted(p for p in (ROOT / "tests" / "conformance").rglob("*.p4")
                  if p.with_suffix(".stf").exists() or p.parent.name == "programs")
PROGRAMS.append(ROOT / "p4src" / "gradlane.p4")

PRELUDE = """
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header ip_t { bit<8> ttl; bit<8> proto; bit<32> dst; }
struct headers_t { eth_t eth; ip_t ip; }
struct meta_t { bit<8> m; bit<8> n; }
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.ip); } }
"""

PLAIN_PARSER = """
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); pkt.extract(hdr.ip); transition accept; }
}
"""


def _action(doc: dict, name: str) -> dict:
    return next(a for a in doc["actions"] if a["name"].endswith(name))


@pytest.mark.parametrize("p4", PROGRAMS, ids=[str(p.relative_to(ROOT)) for p in PROGRAMS])
def test_every_node_has_the_shape_bmv2_reads(p4: Path) -> None:
    doc = compile_file(str(p4), include_dirs=(str(p4.parent),)).bmv2_json
    assert problems(doc) == []


def test_the_checker_finds_a_bare_operation_as_argument() -> None:
    bare = {"actions": [{"name": "a", "primitives": [{"op": "assign", "parameters": [
        {"type": "field", "value": ["ip", "ttl"]},
        {"type": "expression", "value": {"op": "&", "left": {"type": "field", "value": ["ip", "ttl"]},
                                         "right": {"type": "hexstr", "value": "0xff"}}}]}]}]}
    assert problems(bare) == ["actions[0].primitives[0].parameters[1].value: node without 'type' "
                              "(keys ['left', 'op', 'right'])"]


def test_an_operation_as_argument_is_wrapped_as_an_expression_argument() -> None:
    src = PRELUDE + PLAIN_PARSER + """
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action dec(bit<8> by) { hdr.ip.ttl = (hdr.ip.ttl - by) & 0xf0; meta.m = by; }
    table t { key = { } actions = { dec; } default_action = dec(1); }
    apply { t.apply(); }
}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""
    doc = compile_text(src, "wrap.p4").bmv2_json
    first, second = _action(doc, "dec")["primitives"][:2]
    arg = first["parameters"][1]
    assert arg["type"] == "expression"
    assert arg["value"]["type"] == "expression" and arg["value"]["value"]["op"] == "&"
    # action data: "local" inside the expression, "runtime_data" as a whole argument
    minus = arg["value"]["value"]["left"]["value"]["left"]["value"]
    assert minus["op"] == "-" and minus["right"] == {"type": "local", "value": 0}
    assert second["parameters"][1] == {"type": "runtime_data", "value": 0}
    engine = Engine(doc)
    out = engine.process(0, bytes(12) + b"\x08\x00" + bytes([0x35, 17]) + bytes(4))
    assert out[0][1][14] == (0x35 - 1) & 0xf0


def test_lookahead_inside_an_expression_is_read_into_a_field_first() -> None:
    src = PRELUDE + """
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        meta.m = pkt.lookahead<bit<8>>() + 1;
        transition select(pkt.lookahead<bit<8>>() & 0xf0) { 0x40: ip; default: accept; }
    }
    state ip { pkt.extract(hdr.ip); transition accept; }
}
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { sm.egress_spec = 1; hdr.ip.proto = meta.m; }
}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""
    doc = compile_text(src, "look.p4").bmv2_json
    assert problems(doc) == []
    ops = doc["parsers"][0]["parse_states"][0]["parser_ops"]
    sources = [op["parameters"][1]["type"] for op in ops if op["op"] == "set"]
    assert sources.count("lookahead") == 2 and sources.count("expression") == 2
    out = Engine(doc).process(0, bytes(12) + b"\x08\x00" + bytes([0x45, 17]) + bytes(4))
    assert out[0][1][15] == 0x46  # ip parsed (0x45 & 0xf0 == 0x40) and proto = 0x45 + 1


def _conformance(name: str) -> dict:
    p4 = ROOT / "tests" / "conformance" / "language" / f"{name}.p4"
    return compile_file(str(p4), include_dirs=(str(p4.parent),)).bmv2_json


def test_log_msg_always_has_its_vector_of_values() -> None:
    # BMv2: "Invalid number of parameters for primitive action log_msg: expected 2 but got 1"
    calls = [p for a in _conformance("digest_log_assert")["actions"] for p in a["primitives"]
             if p["op"] == "log_msg"]
    assert calls and all(len(p["parameters"]) == 2 and p["parameters"][1]["type"] == "parameters_vector"
                         for p in calls)


def test_a_direct_meter_has_its_tables_size() -> None:
    # BMv2 asserts `size == meter_array->size()` when it binds a direct meter to its table
    doc = _conformance("direct_counter_meter")
    tables = {t["name"]: t for p in doc["pipelines"] for t in p["tables"]}
    direct = [m for m in doc["meter_arrays"] if m["is_direct"]]
    assert direct and all(m["size"] == tables[m["binding"]]["max_size"] for m in direct)


def test_a_boolean_argument_is_passed_as_data() -> None:
    bool_arg = {"type": "expression", "value": {"type": "expression", "value": {
        "op": "==", "left": {"type": "field", "value": ["ip", "ttl"]}, "right": {"type": "hexstr", "value": "0x1"}}}}
    doc = {"actions": [{"name": "a", "primitives": [{"op": "assert", "parameters": [bool_arg]}]}]}
    assert problems(doc) == ["actions[0].primitives[0].parameters[0]: a boolean expression as an argument "
                             "(BMv2 asserts: use b2d)"]
    calls = [p for a in _conformance("digest_log_assert")["actions"] for p in a["primitives"]
             if p["op"] in ("assert", "assume")]
    assert calls and all(p["parameters"][0]["value"]["value"]["op"] == "b2d" for p in calls)


def test_constant_hash_inputs_are_written_at_their_width() -> None:
    # BMv2 takes "0x1" as one byte whatever its bitwidth (p4c's constant-in-calculation sample)
    src = PRELUDE + PLAIN_PARSER + """
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { sm.egress_spec = 1; hash(hdr.ip.dst, HashAlgorithm.crc16, 32w0, { 16w1, 10w3 }, 32w65536); }
}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""
    calc, = compile_text(src, "calc.p4").bmv2_json["calculations"]
    assert calc["input"] == [{"type": "hexstr", "value": "0x0001", "bitwidth": 16},
                             {"type": "hexstr", "value": "0x0003", "bitwidth": 10}]
