"""Programs p4c refuses and the compiler refuses too, each with a one-line error: a keyword as a
declaration's name, two declarations of one name in a scope, a complex table key without @name,
a header that is not a whole number of bytes (BMv2), a run-time ?: with both arms unsized."""
from __future__ import annotations

import pytest

from p4target.compiler import compile_text
from p4target.errors import CompileError

HEAD = """#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; }
struct headers_t { h_t h; }
struct meta_t { }
"""
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
INGRESS = "control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {{ {} }}\n"


def _compile(body: str, head: str = HEAD) -> None:
    compile_text(head + INGRESS.format(body) + BLOCKS, "refused.p4")


def _refused(body: str, head: str = HEAD) -> str:
    with pytest.raises(CompileError) as exc:
        _compile(body, head)
    message = str(exc.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize("keyword", ["out", "in", "inout", "default", "error"])
def test_a_keyword_cannot_name_an_action(keyword: str) -> None:
    message = _refused(f"action {keyword}() {{ }} apply {{ }}")
    assert f"'{keyword}' is a keyword" in message and "refused.p4:6:" in message


def test_keywords_p4_allows_as_names_still_name_things() -> None:
    _compile("action apply_it() { } bit<8> key = 1; apply { hdr.h.a = key; }")


@pytest.mark.parametrize("body", [
    "apply { bit<8> x = 1; bit<8> x = 2; hdr.h.a = x; }",
    "action a() { } action a() { } apply { }",
    "bit<8> v = 1; action v() { } apply { }",
])
def test_a_name_declared_twice_in_one_scope_is_refused(body: str) -> None:
    assert "duplicate declaration of" in _refused(body)


def test_the_same_name_in_nested_or_separate_blocks_is_fine() -> None:
    _compile("apply { if (hdr.h.a == 1) { bit<8> x = 1; hdr.h.b = x; } else { bit<8> x = 2; hdr.h.b = x; } }")


def test_a_complex_key_needs_a_name_annotation() -> None:
    table = "table t {{ key = {{ {} : exact{}; }} actions = {{ NoAction; }} }} apply {{ t.apply(); }}"
    assert "hdr.h.a + 1: a complex key expression needs a @name annotation" in _refused(
        table.format("hdr.h.a + 1", ""))
    _compile(table.format("hdr.h.a + 1", ' @name("a_plus_one")'))
    for simple in ("hdr.h.a", "hdr.h.a[3:0]", "hdr.h.a & 0x0f", "hdr.h.isValid()"):
        _compile(table.format(simple, ""))


def test_a_header_of_a_width_bmv2_cannot_hold_is_refused() -> None:
    odd = HEAD.replace("header h_t { bit<8> a; bit<8> b; }", "header h_t { bit<8> a; bit<8> b; bit<1> f; }")
    message = _refused("apply { }", odd)
    assert "header 'h_t' has fields totaling 17 bits" in message and "multiple of 8" in message


def test_a_run_time_conditional_needs_a_sized_arm() -> None:
    assert "width must be given for one of the ?: arms" in _refused(
        "apply { hdr.h.a = (bit<8>)(hdr.h.b == 1 ? 7 : 9); }")
    _compile("apply { hdr.h.a = (bit<8>)(hdr.h.b == 1 ? 8w7 : 9); }")
    _compile("apply { hdr.h.a = (bit<8>)(true ? 7 : 9); }")
