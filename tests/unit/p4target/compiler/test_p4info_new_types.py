"""P4Info of P4 ``type`` declarations as recent p4c writes it: ``type_name`` references on
match fields, action parameters, controller header fields, digest members and registers; the
controller's width for ``@p4runtime_translation`` types (0 for string translations); and a
``type_info.new_types`` entry (``translated_type`` or ``original_type``) per referenced type."""
from __future__ import annotations

import pytest
from google.protobuf import text_format

from p4target.compiler import compile_text
from p4target.errors import CompileError
from support.p4info_index import P4InfoIndex

_PROGRAM = """
#include <core.p4>
#include <v1model.p4>
@p4runtime_translation("lab.example/port", 16) type bit<9> port_t;
@p4runtime_translation("lab.example/vrf", bit<32>) @color("blue") type bit<12> vrf_t;
@p4runtime_translation("lab.example/name", string) type bit<8> name_t;
type bit<16> tag_t;
typedef tag_t tag_alias_t;
type tag_t outer_tag_t;
type int<8> delta_t;
type bool flag_t;
type bit<4> unused_t;
@controller_header("packet_in") header packet_in_t { port_t ingress_port; bit<7> pad; }
header h_t { bit<8> a; tag_t tag; }
struct H { packet_in_t pin; h_t h; }
struct learn_t { port_t port; bit<8> a; }
struct M { port_t port; vrf_t vrf; name_t nm; outer_tag_t ot; delta_t dl; flag_t fl; }
parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control VC(inout H hdr, inout M m) { apply { } }
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    register<port_t>(4) last_port;
    action fwd(port_t p) { sm.egress_spec = (bit<9>)p; }
    action set(vrf_t v, tag_alias_t t, name_t n, delta_t d, flag_t f) {
        m.vrf = v; hdr.h.tag = t; m.nm = n; m.dl = d; m.fl = f;
    }
    action learn() { learn_t l = {m.port, hdr.h.a}; digest<learn_t>(1, l); }
    table t {
        key = { m.port: exact; m.vrf: ternary; hdr.h.tag: exact; m.ot: exact; hdr.h.a: exact; }
        actions = { fwd; set; learn; NoAction; }
        default_action = NoAction();
    }
    apply { m.port = (port_t)sm.ingress_port; last_port.write(0, m.port); t.apply(); }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control CC(inout H hdr, inout M m) { apply { } }
control D(packet_out pk, in H hdr) { apply { pk.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


@pytest.fixture(scope="module")
def compiled():
    return compile_text(_PROGRAM, "types.p4")


def _spec(msg) -> str:
    return text_format.MessageToString(msg, as_one_line=True)


def test_match_fields_name_their_type_and_take_the_controller_width(compiled):
    fields = P4InfoIndex(compiled.p4info).table("I.t").match_fields
    assert [(f.name, f.bitwidth, f.type_name.name) for f in fields] == [
        ("m.port", 16, "port_t"), ("m.vrf", 32, "vrf_t"), ("hdr.h.tag", 16, "tag_t"),
        ("m.ot", 16, "outer_tag_t"), ("hdr.h.a", 8, "")]


def test_action_params_name_their_type_string_translations_have_width_0(compiled):
    idx = P4InfoIndex(compiled.p4info)
    assert [(p.bitwidth, p.type_name.name) for p in idx.action("I.fwd").params] == [(16, "port_t")]
    assert [(p.name, p.bitwidth, p.type_name.name) for p in idx.action("I.set").params] == [
        ("v", 32, "vrf_t"), ("t", 16, "tag_t"), ("n", 0, "name_t"), ("d", 8, "delta_t"),
        ("f", 1, "flag_t")]


def test_bmv2_json_keeps_the_data_plane_widths(compiled):
    actions = {a["name"]: a for a in compiled.bmv2_json["actions"]}
    assert [rd["bitwidth"] for rd in actions["I.fwd"]["runtime_data"]] == [9]
    assert [rd["bitwidth"] for rd in actions["I.set"]["runtime_data"]] == [12, 16, 8, 8, 1]


def test_controller_header_fields_digest_members_and_registers(compiled):
    info = compiled.p4info
    pin = P4InfoIndex(info).get("controller_packet_metadata", "packet_in")
    assert [(m.name, m.bitwidth, m.type_name.name) for m in pin.metadata] == [
        ("ingress_port", 16, "port_t"), ("pad", 7, "")]
    members = info.type_info.structs["learn_t"].members
    assert [_spec(m.type_spec) for m in members] == [
        'new_type { name: "port_t" }', "bitstring { bit { bitwidth: 8 } }"]
    assert _spec(P4InfoIndex(info).get("registers", "I.last_port").type_spec) == 'new_type { name: "port_t" }'


def test_new_types_entries_for_referenced_types_only(compiled):
    new_types = compiled.p4info.type_info.new_types
    assert sorted(new_types) == ["delta_t", "flag_t", "name_t", "outer_tag_t", "port_t", "tag_t", "vrf_t"]
    assert _spec(new_types["port_t"]) == 'translated_type { uri: "lab.example/port" sdn_bitwidth: 16 }'
    assert _spec(new_types["vrf_t"]) == (
        'translated_type { uri: "lab.example/vrf" sdn_bitwidth: 32 } annotations: "@color(\\"blue\\")"')
    assert _spec(new_types["name_t"]) == 'translated_type { uri: "lab.example/name" sdn_string { } }'
    # a type over another type describes the underlying bit<W>; a typedef names the type it aliases
    assert _spec(new_types["outer_tag_t"]) == "original_type { bitstring { bit { bitwidth: 16 } } }"
    assert _spec(new_types["tag_t"]) == "original_type { bitstring { bit { bitwidth: 16 } } }"
    assert _spec(new_types["delta_t"]) == "original_type { bitstring { int { bitwidth: 8 } } }"
    assert _spec(new_types["flag_t"]) == "original_type { bool { } }"


def test_a_key_of_plain_type_has_no_type_name():
    src = _PROGRAM.replace("port_t port;", "bit<9> port;").replace("(port_t)sm.ingress_port", "sm.ingress_port")
    info = compile_text(src, "plain.p4").p4info
    assert "port_t" in info.type_info.new_types  # still used by fwd, packet_in, the register
    port = P4InfoIndex(info).table("I.t").match_fields[0]
    assert (port.bitwidth, port.HasField("type_name")) == (9, False)


@pytest.mark.parametrize("declaration,message", [
    ('@p4runtime_translation("u", 32) type bool b_t;',
     "P4Runtime requires the underlying type of a type with the @p4runtime_translation annotation "
     "to be bit<W>; it cannot be 'bool'"),
    ('@p4runtime_translation("u", bool) type bit<8> b_t;', "@p4runtime_translation takes a URI string"),
    ('@p4runtime_translation(32) type bit<8> b_t;', "@p4runtime_translation takes a URI string"),
])
def test_bad_translations_are_located_errors(declaration, message):
    src = _PROGRAM.replace("type bit<4> unused_t;", declaration)
    with pytest.raises(CompileError, match=message) as err:
        compile_text(src, "bad.p4").p4info
    assert "bad.p4:" in str(err.value)


def test_directly_called_actions_have_no_control_plane_parameters():
    # p4c 1.2.5.16 on this program lists I.mark without params (its arguments become locals)
    src = _PROGRAM.replace("action learn()", "action mark(port_t p) { m.port = p; }\n    action learn()")
    src = src.replace("t.apply(); }", "t.apply(); mark((port_t)9w1); }")
    params = P4InfoIndex(compile_text(src, "direct.p4").p4info).action("I.mark").params
    assert [(p.name, p.bitwidth, p.type_name.name) for p in params] == []
