"""An `if` on a constant condition keeps P4's meaning of `return` and `exit` in its live branch.

The compiler leaves the dead branch out (its action calls stay out of P4Info, as in p4c) and puts
the live branch where the `if` was: a `return` there leaves the enclosing action, function or
control, and an `exit` ends the control and its callers, exactly as with a run-time condition.
These are the shapes that once ran the code after the `if` (or skipped it) wrongly."""
from __future__ import annotations

import pytest

from p4target.compiler import compile_text
from p4target.engine import Engine

HEADER = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; bit<8> c; bit<8> d; }
struct headers_t { h_t h; }
struct meta_t { }
"""

BLOCKS = """
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { hdr.h.d = hdr.h.d | 8w0x80; }
}
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def _run(body: str, packet: bytes = bytes(4)) -> bytes:
    engine = Engine(compile_text(HEADER + body + BLOCKS, "const_branch.p4").bmv2_json)
    (port, out), = engine.process(0, packet)
    assert port == 1
    return out


@pytest.mark.parametrize("cond", ["!false", "true", "8w1 == 8w1", "!(8w1 == 8w2)", "T"])
def test_return_in_a_constant_true_branch_of_an_action_leaves_the_action(cond: str) -> None:
    out = _run("""
const bool T = true;
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action a() {
        hdr.h.a = 1;
        if (COND) { return; }
        hdr.h.b = 0xBB;
    }
    apply { sm.egress_spec = 1; a(); hdr.h.c = 3; }
}
""".replace("COND", cond))
    assert out == bytes([1, 0, 3, 0x80])


@pytest.mark.parametrize("cond", ["!true", "false", "8w1 == 8w2", "!T"])
def test_return_in_the_else_of_a_constant_false_condition_leaves_the_action(cond: str) -> None:
    out = _run("""
const bool T = true;
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action a() {
        hdr.h.a = 1;
        if (COND) { hdr.h.b = 9; } else { return; }
        hdr.h.b = 0xBB;
    }
    apply { sm.egress_spec = 1; a(); hdr.h.c = 3; }
}
""".replace("COND", cond))
    assert out == bytes([1, 0, 3, 0x80])


def test_return_in_a_dead_branch_leaves_the_code_after_the_if_running() -> None:
    out = _run("""
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action a() {
        if (!true) { return; }
        hdr.h.b = 2;
    }
    apply { sm.egress_spec = 1; a(); hdr.h.c = 3; }
}
""")
    assert out == bytes([0, 2, 3, 0x80])


def test_return_in_a_constant_branch_of_a_table_action() -> None:
    out = _run("""
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action a() {
        hdr.h.a = 1;
        if (!false) { return; }
        hdr.h.b = 0xBB;
    }
    table t { key = { hdr.h.a : exact; } actions = { a; } default_action = a(); }
    apply { sm.egress_spec = 1; t.apply(); hdr.h.c = 3; }
}
""")
    assert out == bytes([1, 0, 3, 0x80])


def test_return_in_a_constant_branch_of_a_function() -> None:
    out = _run("""
bit<8> pick(in bit<8> x) {
    if (!true) { return 8w7; }
    if (true) { return x + 1; }
    return 8w9;
}
void mark(inout bit<8> v) {
    v = 4;
    if (!false) { return; }
    v = 0xEE;
}
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { sm.egress_spec = 1; hdr.h.a = pick(8w1); mark(hdr.h.b); hdr.h.c = 3; }
}
""")
    assert out == bytes([2, 4, 3, 0x80])


def test_return_in_a_constant_branch_of_a_nested_control_ends_only_that_control() -> None:
    out = _run("""
control Sub(inout headers_t hdr) {
    apply {
        hdr.h.a = 1;
        if (!false) { return; }
        hdr.h.b = 0xBB;
    }
}
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    Sub() sub;
    apply {
        sm.egress_spec = 1;
        sub.apply(hdr);
        hdr.h.c = 3;
        if (!false) { return; }
        hdr.h.c = 0xCC;
    }
}
""")
    assert out == bytes([1, 0, 3, 0x80])


@pytest.mark.parametrize("where", ["action", "apply", "control"])
def test_exit_in_a_constant_branch_ends_ingress(where: str) -> None:
    stop = "hdr.h.a = 1; if (!false) { exit; } hdr.h.b = 0xBB;"
    out = _run("""
control Sub(inout headers_t hdr) { apply { CONTROL } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    Sub() sub;
    action a() { ACTION }
    apply { sm.egress_spec = 1; a(); APPLY sub.apply(hdr); hdr.h.c = 3; }
}
""".replace("ACTION", stop if where == "action" else "")
   .replace("APPLY", stop if where == "apply" else "")
   .replace("CONTROL", stop if where == "control" else ""))
    assert out == bytes([1, 0, 0, 0x80])  # egress still runs


def test_return_after_a_call_in_the_condition_leaves_the_action() -> None:
    out = _run("""
bool yes(inout bit<8> v) { v = v + 1; return true; }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action a() {
        if (yes(hdr.h.a)) { return; }
        hdr.h.b = 0xBB;
    }
    apply { sm.egress_spec = 1; a(); hdr.h.c = 3; }
}
""")
    assert out == bytes([1, 0, 3, 0x80])


def test_return_of_a_call_in_a_branch_leaves_the_function() -> None:
    out = _run("""
bit<8> inc(in bit<8> x) { return x + 1; }
bit<8> f(in bit<8> x) {
    if (x == 0) { return inc(x); }
    return 8w9;
}
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { sm.egress_spec = 1; hdr.h.a = f(hdr.h.a); hdr.h.c = 3; }
}
""")
    assert out == bytes([1, 0, 3, 0x80])


def test_a_dead_branchs_action_call_stays_out_of_p4info() -> None:
    result = compile_text(HEADER + """
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action dead() { hdr.h.b = 1; }
    action live() { hdr.h.b = 2; }
    apply { sm.egress_spec = 1; if (!true) { dead(); } else { live(); } }
}
""" + BLOCKS, "const_branch.p4")
    names = [a.preamble.name for a in result.p4info.actions]
    assert "I.live" in names and "I.dead" not in names


# BMv2's `exit` primitive marks the packet and its action goes on (the embedded switch does the
# same): an action's primitives after an exit must be left out or jumped over.
@pytest.mark.parametrize("cond", ["!false", "hdr.h.a == 8w0"])
def test_exit_in_a_branch_of_a_table_action_skips_the_rest_of_the_action(cond: str) -> None:
    out = _run("""
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action a() {
        hdr.h.b = 1;
        if (COND) { exit; }
        hdr.h.b = 0xBB;
    }
    table t { key = { hdr.h.a : exact; } actions = { a; } default_action = a(); }
    apply { sm.egress_spec = 1; t.apply(); hdr.h.c = 3; }
}
""".replace("COND", cond))
    assert out == bytes([0, 1, 0, 0x80])


def test_exit_after_a_conditional_return_in_a_table_action() -> None:
    src = """
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action a() {
        hdr.h.b = 1;
        if (hdr.h.a == 8w1) { return; }
        exit;
        hdr.h.b = 0xBB;
    }
    table t { key = { hdr.h.a : exact; } actions = { a; } default_action = a(); }
    apply { sm.egress_spec = 1; t.apply(); hdr.h.c = 3; }
}
"""
    assert _run(src, bytes([1, 0, 0, 0])) == bytes([1, 1, 3, 0x80])  # returned: ingress goes on
    assert _run(src, bytes([0, 0, 0, 0])) == bytes([0, 1, 0, 0x80])  # exited


def test_no_primitive_follows_an_unconditional_exit_in_an_action() -> None:
    result = compile_text(HEADER + """
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action a() { hdr.h.b = 1; if (!false) { exit; } hdr.h.b = 0xBB; }
    table t { key = { hdr.h.a : exact; } actions = { a; } default_action = a(); }
    apply { sm.egress_spec = 1; t.apply(); }
}
""" + BLOCKS, "const_branch.p4")
    action, = [a for a in result.bmv2_json["actions"] if a["name"] == "I.a"]
    assert [p["op"] for p in action["primitives"]] == ["assign", "exit"]
