"""Compiler back end: BMv2 JSON shape, names as P4Info/p4c use them, semantic errors, and
robustness (a broken program is a CompileError, never another exception)."""
from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from p4target.compiler import compile_file, compile_text
from p4target.engine import Engine, Exact, Lpm
from p4target.errors import CompileError

ROOT = Path(__file__).resolve().parents[4]
LANG = ROOT / "tests" / "conformance" / "language"

PRELUDE = """
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header ip_t { bit<8> ttl; bit<8> proto; bit<32> dst; }
struct headers_t { eth_t eth; ip_t ip; }
struct meta_t { bit<8> m; bool flag; }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.type) { 0x0800: parse_ip; default: accept; }
    }
    state parse_ip { pkt.extract(hdr.ip); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.ip); } }
"""

ROUTER = PRELUDE + """
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    counter(32w16, CounterType.packets) rx;
    action fwd(bit<9> port, bit<48> mac) { sm.egress_spec = port; hdr.eth.dst = mac; hdr.ip.ttl = hdr.ip.ttl - 1; }
    action drop() { mark_to_drop(sm); }
    table route {
        key = { hdr.ip.dst: lpm @name("dst_addr"); }
        actions = { fwd; drop; @defaultonly NoAction; }
        default_action = drop();
        size = 256;
    }
    apply {
        rx.count((bit<32>)sm.ingress_port);
        if (hdr.ip.isValid()) { route.apply(); } else { drop(); }
    }
}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def _frame(dst_ip: int, ttl: int = 64) -> bytes:
    return bytes(6) + bytes(6) + b"\x08\x00" + bytes([ttl, 17]) + dst_ip.to_bytes(4, "big")


def test_router_json_names_and_forwarding() -> None:
    c = compile_text(ROUTER, "router.p4")
    j = c.bmv2_json
    ingress = j["pipelines"][0]
    table = next(t for t in ingress["tables"] if t["name"] == "I.route")
    assert table["key"] == [{"match_type": "lpm", "name": "dst_addr", "target": ["ip", "dst"], "mask": None}]
    assert table["max_size"] == 256 and table["match_type"] == "lpm"
    assert {a["name"] for a in j["actions"]} >= {"I.fwd", "I.drop", "NoAction"}
    fwd = next(a for a in j["actions"] if a["name"] == "I.fwd")
    assert fwd["runtime_data"] == [{"name": "port", "bitwidth": 9}, {"name": "mac", "bitwidth": 48}]
    assert [c_["name"] for c_ in j["counter_arrays"]] == ["I.rx"]

    engine = Engine(j)
    engine.table_add("I.route", [Lpm(0x0A000000, 8)], "I.fwd", [3, 0xAABBCCDDEEFF])
    (port, out), = engine.process(1, _frame(0x0A010203))
    assert port == 3 and out[:6] == bytes.fromhex("aabbccddeeff") and out[14] == 63
    assert engine.process(1, _frame(0x0B000001)) == []  # default drop()
    assert engine.counter_read("I.rx", 1)[0] == 2


def test_synthesized_tables_are_named_as_p4c_names_them() -> None:
    """Statements outside any action become a hidden action and table named after the file and
    the first statement's line, as p4c names them (p4c's STF runner finds tables by name suffix,
    so `tbl_act` was taken for a table `t`)."""
    line = ROUTER.splitlines().index("        rx.count((bit<32>)sm.ingress_port);") + 1
    tables = [t["name"] for t in compile_text(ROUTER, "router.p4").bmv2_json["pipelines"][0]["tables"]]
    assert f"tbl_router{line}" in tables
    # a digit at the end of the file's name gets an `l`, other characters are dropped
    tables = [t["name"] for t in compile_text(ROUTER, "my-prog2.p4").bmv2_json["pipelines"][0]["tables"]]
    assert f"tbl_myprog2l{line}" in tables


def test_standard_metadata_aliases_are_written_as_p4c_writes_them() -> None:
    """v1model's @alias fields become field_aliases: simple_switch multicasts, queues by priority
    and fills queue depths and timestamps only through those names."""
    from p4target.engine.sample_programs import FIELD_ALIASES
    assert compile_text(ROUTER, "router.p4").bmv2_json["field_aliases"] == FIELD_ALIASES


def test_p4info_names_scopes_and_hidden_tables() -> None:
    c = compile_text(ROUTER, "router.p4")
    names = [t.preamble.name for t in c.p4info.tables]
    assert names == ["I.route"]  # synthesized tbl_* stay out
    route = c.p4info.tables[0]
    assert route.match_fields[0].name == "dst_addr" and route.match_fields[0].bitwidth == 32
    scopes = {ref.id: ref.scope for ref in route.action_refs}
    noaction = next(a.preamble.id for a in c.p4info.actions if a.preamble.name == "NoAction")
    assert scopes[noaction] == 2  # DEFAULT_ONLY
    assert route.size == 256


def test_bool_metadata_and_ternary_and_slices() -> None:
    src = PRELUDE + """
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        meta.flag = hdr.ip.ttl > 8w10;
        meta.m = meta.flag ? hdr.ip.proto[3:0] ++ 4w0xF : 8w0;
        hdr.ip.proto = meta.m;
        hdr.ip.ttl[7:4] = 4w0xA;
        sm.egress_spec = 2;
    }
}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""
    engine = Engine(compile_text(src, "t.p4").bmv2_json)
    (_, out), = engine.process(0, _frame(1, ttl=0x21))
    assert out[15] == 0x1F          # proto 17 = 0x11 -> low nibble 1, then F
    assert out[14] == 0xA1          # ttl high nibble replaced
    (_, out), = engine.process(0, _frame(1, ttl=5))
    assert out[15] == 0


def test_actions_with_conditions_are_predicated() -> None:
    src = PRELUDE + """
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action pick() {
        if (hdr.ip.ttl == 1) { hdr.ip.ttl = 100; hdr.ip.proto = 1; } else { hdr.ip.proto = 2; }
    }
    table t { key = { hdr.eth.type: exact; } actions = { pick; } default_action = pick(); }
    apply { t.apply(); sm.egress_spec = 1; }
}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""
    engine = Engine(compile_text(src, "t.p4").bmv2_json)
    (_, out), = engine.process(0, _frame(1, ttl=1))
    assert (out[14], out[15]) == (100, 1)   # the condition is evaluated once, before the branch
    (_, out), = engine.process(0, _frame(1, ttl=7))
    assert (out[14], out[15]) == (7, 2)


@pytest.mark.parametrize("body, message", [
    ("apply { nosuch = 1; }", "unknown name 'nosuch'"),
    ("table t { key = { hdr.ip.dst: exact; } actions = { NoAction; } }\n apply { t.apply(); t.apply(); }",
     "applied more than once"),
    ("action a() {} table t { key = { hdr.ip.dst: exact; } actions = { NoAction; } default_action = a(); }\n"
     " apply { t.apply(); }", "not in the actions"),
    ("apply { hdr.ip.ttl = hdr.ip.dst[40:0]; }", "bad slice"),
    ("table t { key = { hdr.ip.dst: fuzzy; } actions = { NoAction; } }\n apply { t.apply(); }",
     "unknown match kind 'fuzzy'"),
    ("apply { if (hdr.ip.ttl) { } }", "condition must be bool"),
    ("apply { for (bit<8> i = 0; i < hdr.ip.ttl; i = i + 1) { hdr.ip.ttl = hdr.ip.ttl - 1; } }",
     "unsupported construct: 'for' loop in a control whose iterations are not known at compile time "
     "(its condition does not compare the loop variable with a constant"),
    ("apply { for (bit<8> i = 0; i < 4; i = i + 1) { i = 2; } }", "(its body assigns 'i'"),
    ("apply { for (bit<8> i = 1; i != 0; i = i + 2) { } }", "does not end within 1000 iterations"),
    ("apply { for (bit<8> i in 0 .. hdr.ip.ttl) { } }",
     "unsupported construct: 'for ... in' loop in a control whose iterations are not known at "
     "compile time (its range bounds are not compile-time constants"),
    ("apply { @nounroll for (bit<8> i = 0; i < 4; i = i + 1) { } }", "(it is marked @nounroll;"),
    ("apply { @nounroll for (bit<8> i in 0 .. 3) { } }", "(it is marked @nounroll;"),
    ("apply { for (bit<8> i in hdr.ip) { } }", "'for ... in' needs a range"),
    ("action a() { break; } apply { a(); }", "'break' outside a for loop"),
])
def test_semantic_errors_name_the_problem(body: str, message: str) -> None:
    src = PRELUDE + "control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {\n" + \
        body + "\n}\nV1Switch(P(), VC(), I(), E(), CC(), D()) main;\n"
    with pytest.raises(CompileError) as info:
        compile_text(src, "bad.p4")
    assert message in str(info.value)
    assert str(info.value).startswith("bad.p4:")


def test_missing_main_and_unknown_state() -> None:
    with pytest.raises(CompileError, match="no 'main'"):
        compile_text(PRELUDE, "nomain.p4")
    src = PRELUDE.replace("transition accept; }\n}", "transition nowhere; }\n}", 1) + \
        "control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }\n" \
        "V1Switch(P(), VC(), I(), E(), CC(), D()) main;\n"
    with pytest.raises(CompileError, match="unknown parser state 'nowhere'"):
        compile_text(src, "state.p4")


def test_varbit_extract_needs_its_size() -> None:
    src = PRELUDE.replace("struct headers_t", "header v_t { varbit<64> opts; }\nstruct headers_t") + """
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""
    src = src.replace("ip_t ip; }", "ip_t ip; v_t v; }")
    with pytest.raises(CompileError, match="varbit size in bits as second argument"):
        compile_text(src.replace("pkt.extract(hdr.ip);", "pkt.extract(hdr.v);"), "u.p4")
    with pytest.raises(CompileError, match="needs a header with a varbit field"):
        compile_text(src.replace("pkt.extract(hdr.ip);", "pkt.extract(hdr.ip, 32w8);"), "u.p4")
    doc = compile_text(src.replace("pkt.extract(hdr.ip);", "pkt.extract(hdr.v, 32w16);"), "u.p4").bmv2_json
    vt = next(t for t in doc["header_types"] if t["name"] == "v_t")
    assert vt["fields"] == [["opts", "*"]] and vt["max_length"] == 8
    ops = doc["parsers"][0]["parse_states"][1]["parser_ops"]
    assert ops[0]["op"] == "extract_VL" and ops[0]["parameters"][1]["type"] == "expression"


def test_extern_calls_and_exit_under_conditions_in_actions_use_jumps() -> None:
    src = PRELUDE + """
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    counter(32w4, CounterType.packets) c;
    action a() {
        if (hdr.ip.ttl == 0) { c.count(0); mark_to_drop(sm); return; }
        else if (hdr.ip.ttl == 1) { c.count(1); exit; }
        c.count(2);
        hdr.ip.proto = 55;
    }
    table t { key = { hdr.ip.dst: exact; } actions = { a; } default_action = a(); }
    apply { sm.egress_spec = 1; t.apply(); hdr.ip.proto = hdr.ip.proto + 1; }
}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""
    j = compile_text(src, "j.p4").bmv2_json
    ops = [p["op"] for p in next(a for a in j["actions"] if a["name"] == "I.a")["primitives"]]
    assert ops.count("_jump_if_zero") == 2 and "exit" in ops
    engine = Engine(j)
    assert engine.process(0, _frame(1, ttl=0)) == []                     # dropped, then return
    assert [(p, o[15]) for p, o in engine.process(0, _frame(1, ttl=1))] == [(1, 17)]  # exit skips the rest
    assert [(p, o[15]) for p, o in engine.process(0, _frame(1, ttl=2))] == [(1, 56)]
    assert [engine.counter_read("I.c", i)[0] for i in range(3)] == [1, 1, 1]


@pytest.mark.slow
def test_mutated_programs_fail_only_with_compile_errors() -> None:
    rng = random.Random(7)
    sources = [p for p in sorted(LANG.glob("*.p4"))
               if p.name not in ("lang_common.p4", "lang_blocks.p4", "preprocessor_defs.p4")]
    for _ in range(150):
        path = rng.choice(sources)
        lines = path.read_text().split("\n")
        i = rng.randrange(len(lines))
        if rng.random() < 0.5:
            del lines[i]
        else:
            words = lines[i].split()
            rng.shuffle(words)
            lines[i] = " ".join(words)
        try:
            compile_text("\n".join(lines), str(path), include_dirs=[str(LANG)])
        except CompileError:
            pass


def test_gradlane_program_compiles_and_loads() -> None:
    c = compile_file(str(ROOT / "p4src" / "gradlane.p4"), include_dirs=[str(ROOT / "p4src")])
    Engine(c.bmv2_json, priority_queues=8)
    tables = {t.preamble.name for t in c.p4info.tables}
    assert {"GradIngress.ipv4_lpm", "GradIngress.gradient_class", "GradEgress.ecn_config"} <= tables


def test_return_in_actions_and_inlined_functions() -> None:
    src = PRELUDE.replace("control VC", """
bit<8> clamp(in bit<8> x, in bit<8> hi) {
    if (x > hi) { return hi; }
    return x;
}
control VC""") + """
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action pick() {
        hdr.ip.proto = clamp(hdr.ip.ttl, 8w20);
        if (hdr.ip.ttl == 7) { hdr.ip.proto = 77; return; }
        hdr.ip.proto = hdr.ip.proto + 100;
        return;
        hdr.ip.proto = 0;
    }
    table t { key = { hdr.eth.type: exact; } actions = { pick; } default_action = pick(); }
    apply {
        bit<8> c = clamp(hdr.ip.ttl, 8w30);
        hdr.ip.ttl = c;
        t.apply();
        sm.egress_spec = 1;
    }
}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""
    engine = Engine(compile_text(src, "f.p4").bmv2_json)
    results = {ttl: engine.process(0, _frame(1, ttl=ttl))[0][1][14:16] for ttl in (7, 15, 25, 40)}
    assert results[7] == bytes([7, 77])          # conditional return skips the rest
    assert results[15] == bytes([15, 115])       # clamp(15, 20) + 100
    assert results[25] == bytes([25, 120])       # clamp(25, 20) + 100
    assert results[40] == bytes([30, 120])       # ttl clamped to 30 in apply, then 20 + 100


def test_sub_control_is_inlined_with_qualified_names_and_return() -> None:
    src = PRELUDE + """
control Sub(inout headers_t hdr, inout standard_metadata_t sm) {
    action set_port(bit<9> p) { sm.egress_spec = p; }
    table pick { key = { hdr.ip.proto: exact; } actions = { set_port; NoAction; } default_action = NoAction(); }
    apply {
        if (hdr.ip.ttl == 1) { return; }
        pick.apply();
        hdr.ip.ttl = 9;
    }
}
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    Sub() sub;
    apply { sm.egress_spec = 1; sub.apply(hdr, sm); hdr.eth.type = 0x0801; }
}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""
    c = compile_text(src, "sub.p4")
    assert [t.preamble.name for t in c.p4info.tables] == ["I.sub.pick"]
    engine = Engine(c.bmv2_json)
    engine.table_add("I.sub.pick", [Exact(17)], "I.sub.set_port", [4])
    (port, out), = engine.process(0, _frame(1, ttl=1))   # return: the rest of Sub is skipped
    assert (port, out[14], out[12:14]) == (1, 1, b"\x08\x01")
    (port, out), = engine.process(0, _frame(1, ttl=5))
    assert (port, out[14], out[12:14]) == (4, 9, b"\x08\x01")


def test_apply_hit_inside_larger_expressions() -> None:
    src = PRELUDE + """
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    table t { key = { hdr.ip.dst: exact; } actions = { NoAction; } }
    table u { key = { hdr.ip.proto: exact; } actions = { NoAction; } }
    apply {
        sm.egress_spec = 1;
        if (t.apply().hit && hdr.ip.ttl > 10) { hdr.ip.proto = 1; }
        bool m = u.apply().miss;
        if (m) { hdr.ip.ttl = 0; }
    }
}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""
    engine = Engine(compile_text(src, "h.p4").bmv2_json)
    engine.table_add("I.t", [Exact(5)], "NoAction")
    engine.table_add("I.u", [Exact(17)], "NoAction")
    seen = {(dst, ttl): engine.process(0, _frame(dst, ttl=ttl))[0][1][14:16] for dst, ttl in ((5, 20), (5, 5), (6, 20))}
    assert seen[(5, 20)] == bytes([0, 1])     # t hit and ttl > 10: proto 1, so u misses: ttl 0
    assert seen[(5, 5)] == bytes([5, 17])
    assert seen[(6, 20)] == bytes([20, 17])


def test_selector_keys_without_a_selector_are_dropped() -> None:
    src = PRELUDE + """
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action a(bit<9> p) { sm.egress_spec = p; }
    table t { key = { hdr.ip.dst: exact; hdr.ip.ttl: selector; } actions = { a; } }
    apply { t.apply(); }
}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""
    doc = compile_text(src, "sel.p4").bmv2_json
    t = next(t for t in doc["pipelines"][0]["tables"] if t["name"] == "I.t")
    assert [k["target"] for k in t["key"]] == [["ip", "dst"]] and t["type"] == "simple"


def test_unused_lookahead_statement_is_accepted() -> None:
    src = PRELUDE.replace("state parse_ip { pkt.extract(hdr.ip);",
                          "state parse_ip { pkt.lookahead<bit<64>>(); pkt.extract(hdr.ip);") + """
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""
    doc = compile_text(src, "look.p4").bmv2_json
    ops = doc["parsers"][0]["parse_states"][1]["parser_ops"]
    # the value goes nowhere useful, but the length check stays (p4c issue 1768's STF test)
    assert [o["op"] for o in ops] == ["set", "extract"]
    assert ops[0]["parameters"][1] == {"type": "lookahead", "value": [0, 64]}


def test_table_and_action_ids_timeouts_and_param_names() -> None:
    src = PRELUDE + """
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    @id(0x01000007) action fwd(@name("port") bit<9> p) { sm.egress_spec = p; }
    @id(0x02000009)
    table t { key = { hdr.ip.dst: exact; } actions = { fwd; } support_timeout = true; }
    apply { t.apply(); }
}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""
    compiled = compile_text(src, "ids.p4")
    t = next(t for t in compiled.bmv2_json["pipelines"][0]["tables"] if t["name"] == "I.t")
    assert t["support_timeout"] is True
    a = next(a for a in compiled.bmv2_json["actions"] if a["name"] == "I.fwd")
    assert a["runtime_data"] == [{"name": "port", "bitwidth": 9}]
    info = compiled.p4info
    pt = next(x for x in info.tables if x.preamble.name == "I.t")
    pa = next(x for x in info.actions if x.preamble.name == "I.fwd")
    assert pt.preamble.id == 0x02000009 and pt.idle_timeout_behavior == pt.NOTIFY_CONTROL
    assert pa.preamble.id == 0x01000007 and [p.name for p in pa.params] == ["port"]


def test_log_msg_prints_headers_and_structs_field_by_field() -> None:
    from p4target.engine import Engine
    src = PRELUDE + """
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        meta.m = 7;
        log_msg("ip={} m={} end {}", { hdr.ip, meta, 8w9 });
    }
}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""
    doc = compile_text(src, "log.p4").bmv2_json
    logs: list[str] = []
    e = Engine(doc)
    e.set_log_callback(logs.append)
    e.process(0, bytes(12) + b"\x08\x00" + bytes([64, 6]) + bytes([10, 0, 0, 1]))
    assert "ip=(ttl:64,proto:6,dst:167772161) m=(m:7,flag:0) end 9" in logs


def test_register_of_structs_is_reported_at_its_declaration() -> None:
    src = PRELUDE + """
struct pair_t { bit<8> x; bit<8> y; }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    register<pair_t>(32w4) r;
    apply { }
}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""
    with pytest.raises(CompileError, match=r"^reg\.p4:\d+:\d+: error: unsupported construct: register of pair_t"):
        compile_text(src, "reg.p4")


SUB_PARSER_UNDER_IF = """
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header ip_t { bit<8> ttl; bit<8> proto; bit<32> dst; }
struct headers_t { eth_t eth; ip_t ip; }
struct meta_t { }
parser Sub(packet_in pkt, out ip_t ip) {
    state start { pkt.extract(ip); transition accept; }
}
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    Sub() sub;
    state start {
        pkt.extract(hdr.eth);
        if (hdr.eth.type == 0x0800) { CALL }
        transition accept;
    }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


@pytest.mark.parametrize("call", ["sub.apply(pkt, hdr.ip);", "Sub.apply(pkt, hdr.ip);"])
def test_sub_parser_under_an_if_is_reported(call: str) -> None:
    with pytest.raises(CompileError, match=r"^sub\.p4:\d+:\d+: error: unsupported construct: sub-parser calls outside"):
        compile_text(SUB_PARSER_UNDER_IF.replace("CALL", call), "sub.p4")


def test_stack_next_read_in_a_parser_is_the_element_at_next_index() -> None:
    from p4target.engine import Engine
    src = """
#include <core.p4>
#include <v1model.p4>
header t_t { bit<8> y; }
struct headers_t { t_t[3] s; }
struct meta_t { bit<8> peek; }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        hdr.s[1].setValid();
        hdr.s[1].y = 8w7;
        pkt.extract(hdr.s.next);
        meta.peek = hdr.s.next.y;
        transition accept;
    }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { hdr.s[0].y = meta.peek; }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.s); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""
    doc = compile_text(src, "next.p4").bmv2_json
    assert '"op": "size_stack"' in json.dumps(doc)  # BMv2's name for nextIndex
    out = Engine(doc).process(0, bytes([0x55, 0x66]))
    # s[0] extracted (0x55 replaced by the peeked s[1].y = 7), s[1] emitted, 0x66 payload
    assert out == [(0, bytes([0x07, 0x07, 0x66]))]


def test_varbit_variables_are_metadata_headers_copied_with_assign_vl() -> None:
    src = PRELUDE.replace("struct headers_t { eth_t eth; ip_t ip; }",
                          "header o_t { varbit<32> v; }\nstruct headers_t { eth_t eth; ip_t ip; o_t o; }") + """
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    varbit<32> keep;
    apply { keep = hdr.o.v; hdr.o.v = keep; }
}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""
    j = compile_text(src, "vb.p4").bmv2_json
    (vtype,) = [t for t in j["header_types"] if t["name"] == "$varbit32"]
    assert vtype["fields"] == [["field", "*"]] and vtype["max_length"] == 4
    (inst,) = [h for h in j["headers"] if h["header_type"] == "$varbit32"]
    assert inst["metadata"] is True and inst["name"] == "I.keep"
    ops = [p["op"] for a in j["actions"] for p in a["primitives"]]
    assert ops.count("assign_VL") == 2 and "assign" not in ops
    with pytest.raises(CompileError, match="varbit value can only be assigned from a varbit field"):
        compile_text(src.replace("keep = hdr.o.v;", "keep = hdr.o.v; keep = 1;"), "vb.p4")


def test_action_loops_unroll_when_their_iterations_are_known() -> None:
    def ops(loop: str) -> list[str]:
        src = PRELUDE + """
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action a() { LOOP { hdr.ip.ttl = hdr.ip.ttl + 1; } }
    table t { key = { } actions = { a; } default_action = a(); }
    apply { t.apply(); }
}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
""".replace("LOOP", loop)
        j = compile_text(src, "a.p4").bmv2_json
        return [p["op"] for a in j["actions"] if a["name"].endswith(".a") for p in a["primitives"]]
    assert ops("for (bit<8> i = 0; i < 3; i = i + 1)") == ["assign"] * 7  # init, (body, update) x3
    assert "_jump" in ops("@nounroll for (bit<8> i = 0; i < 3; i = i + 1)")
    assert "_jump" in ops("for (bit<8> i = 0; i < hdr.ip.proto; i = i + 1)")
    assert "_jump" in ops("for (bit<8> i in 1 .. hdr.ip.proto)")
    assert "_jump" not in ops("for (bit<8> i in 1 .. 3)")
