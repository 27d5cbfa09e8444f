"""P4Runtime on values of @p4runtime_translation types, as simple_switch_grpc (PI) treats them:
no translation; values must fit the P4Info (controller) width and reach the data plane cut to
its field width; a key field of another byte width fails inserts with UNKNOWN; string
translations (P4Info width 0) reject every value with INVALID_ARGUMENT."""
import grpc
import pytest
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2

from p4target.compiler import compile_text

Entity = p4runtime_pb2.Entity

_PROGRAM = """
#include <core.p4>
#include <v1model.p4>
@p4runtime_translation("lab.example/port", 16) type bit<9> port_t;
@p4runtime_translation("lab.example/vrf", 32) type bit<12> vrf_t;
@p4runtime_translation("lab.example/name", string) type bit<8> name_t;
header h_t { bit<8> a; bit<8> b; }
struct H { h_t h; }
struct M { port_t port; vrf_t vrf; }
parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control VC(inout H hdr, inout M m) { apply { } }
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    action fwd(port_t p) { sm.egress_spec = (bit<9>)p; }
    action label(name_t n) { hdr.h.b = (bit<8>)n; }
    table t_port {
        key = { m.port: exact; }
        actions = { fwd; label; NoAction; }
        default_action = NoAction();
    }
    table t_vrf {
        key = { m.vrf: exact; }
        actions = { NoAction; }
    }
    apply {
        sm.egress_spec = 1;
        m.port = (port_t)sm.ingress_port;
        m.vrf = (vrf_t)(bit<12>)hdr.h.a;
        t_port.apply();
        t_vrf.apply();
    }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control CC(inout H hdr, inout M m) { apply { } }
control D(packet_out pk, in H hdr) { apply { pk.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


@pytest.fixture
def translated(switch, helpers):
    prog = compile_text(_PROGRAM, "translated.p4")
    c = switch.client()
    c.set_pipeline(prog.bmv2_json, prog.p4info)
    return switch, c, helpers.Ids(prog.p4info)


def _entries(c, table_id):
    return [e.table_entry for e in c.read(Entity(table_entry=p4runtime_pb2.TableEntry(table_id=table_id)))]


def _failure(c, helpers, entry):
    with pytest.raises(grpc.RpcError) as err:
        c.write(helpers.update("INSERT", "table_entry", entry))
    [(code, message)] = helpers.write_errors(err.value)
    return code, message


def test_translated_key_and_param_are_written_read_and_matched_untranslated(translated, helpers):
    sw, c, ids = translated
    entry = ids.entry("I.t_port", [("m.port", "exact", 3)], "I.fwd", [5])
    c.write(helpers.update("INSERT", "table_entry", entry))
    assert _entries(c, ids.table("I.t_port")) == [entry]
    sw.target.receive(3, b"\x07\x00")
    assert sw.sink.get() == (5, b"\x07\x00")


def test_values_fitting_the_controller_width_reach_the_data_plane_cut_to_its_width(translated, helpers):
    sw, c, ids = translated
    # 16-bit controller values for a 9-bit port: BMv2 masks the key's first byte, and the
    # 9-bit egress_spec keeps the parameter's low bits
    c.write(helpers.update("INSERT", "table_entry",
                           ids.entry("I.t_port", [("m.port", "exact", 0xFE04)], "I.fwd", [0x8206])))
    [stored] = _entries(c, ids.table("I.t_port"))
    assert stored.match[0].exact.value == b"\x04"
    assert stored.action.action.params[0].value == b"\x06"
    sw.target.receive(4, b"\x07\x00")
    assert sw.sink.get() == (6, b"\x07\x00")


def test_values_wider_than_the_controller_width_are_invalid(translated, helpers):
    _, c, ids = translated
    code, message = _failure(c, helpers, ids.entry("I.t_port", [("m.port", "exact", 0x10000)], "I.fwd", [1]))
    assert code == code_pb2.INVALID_ARGUMENT and "m.port" in message


def test_key_of_another_byte_width_than_the_data_plane_fails_every_insert(translated, helpers):
    _, c, ids = translated
    code, message = _failure(c, helpers, ids.entry("I.t_vrf", [("m.vrf", "exact", 7)], "NoAction"))
    assert code == code_pb2.UNKNOWN
    assert message.startswith("Error when adding match entry to target")
    assert "32 bits in the P4Info (type 'vrf_t') but 12 bits in the data plane" in message
    assert _entries(c, ids.table("I.t_vrf")) == []


def test_string_translations_are_not_supported(translated, helpers):
    _, c, ids = translated
    code, message = _failure(c, helpers, ids.entry("I.t_port", [("m.port", "exact", 9)], "I.label", [b"x"]))
    assert code == code_pb2.INVALID_ARGUMENT
    assert "does not fit within 0 bits (type 'name_t')" in message
