"""hash() data is copied into scalars first, as p4c does, so the hash sees every element's
value even when its header is invalid (BMv2 would leave such header fields out)."""
from p4target.compiler import compile_text
from p4target.engine import Engine, hashes

SRC = r"""
#include <core.p4>
#include <v1model.p4>
header a_t { bit<32> x; bit<16> y; }
header b_t { bit<16> p; }
struct H { a_t a; b_t b; }
struct M { bit<32> idx; }
parser P(packet_in pk, out H h, inout M m, inout standard_metadata_t sm) {
    state start { pk.extract(h.a); transition select(h.a.y) { 1: pb; default: accept; } }
    state pb { pk.extract(h.b); transition accept; }
}
control VC(inout H h, inout M m) { apply { } }
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    apply {
        hash(m.idx, HashAlgorithm.crc32, (bit<32>)0, { h.a.x, h.b.p, h.a.y + 1 }, (bit<64>)1 << 32);
        h.a.x = m.idx;
        sm.egress_spec = 1;
    }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H h, inout M m) { apply { } }
control D(packet_out pk, in H h) { apply { pk.emit(h.a); pk.emit(h.b); } }
V1Switch(P(), VC(), I(), E(), C(), D()) main;
"""


def test_hash_data_goes_through_scalars_and_keeps_invalid_fields():
    prog = compile_text(SRC, "hash.p4")
    (calc,) = prog.bmv2_json["calculations"]
    assert all(i["type"] == "field" and i["value"][0] == "scalars" for i in calc["input"])
    eng = Engine(prog.bmv2_json)
    # h.b is not parsed (y = 2): its 16 bits still enter the hash, as zeros
    out = eng.process(0, bytes.fromhex("0a0b0c0d" "0002"))[0][1]
    want = hashes.crc32(bytes.fromhex("0a0b0c0d" "0000" "0003"))
    assert int.from_bytes(out[:4], "big") == want
