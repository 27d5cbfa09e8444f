// Parser value sets: `value_set<bit<8>>` and a struct value set over a two-field select key.
// The control plane fills them at run time (they start empty: only the constant cases match
// here; tests/unit/p4target/engine/test_value_sets.py adds values).
#include "lang_common.p4"

header tag_t {
    bit<8> kind;
    bit<8> val;
}

struct vs_headers_t {
    h_t   h;
    tag_t tag;
}

struct pair_t {
    bit<8>  kind;
    bit<16> c;
}

struct meta_t {
    bit<1> paired;
}

parser VsParser(packet_in pkt, out vs_headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    value_set<bit<8>>(4) tagged;
    value_set<pair_t>(2) pairs;

    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.a) {
            tagged: parse_tag;
            8w0x10: parse_tag;
            default: accept;
        }
    }
    state parse_tag {
        pkt.extract(hdr.tag);
        transition select(hdr.tag.kind, hdr.h.c) {
            pairs: mark;
            (8w0x77, 16w0x0001): mark;
            default: accept;
        }
    }
    state mark {
        meta.paired = 1;
        transition accept;
    }
}

control NoVerify(inout vs_headers_t hdr, inout meta_t meta) { apply { } }
control NoEgress(inout vs_headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control NoCompute(inout vs_headers_t hdr, inout meta_t meta) { apply { } }
control Emit(packet_out pkt, in vs_headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
        pkt.emit(hdr.tag);
    }
}

control Report(inout vs_headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        hdr.h.b = hdr.tag.isValid() ? 8w1 : 8w0;
        if (meta.paired == 1) {
            hdr.h.e = 32w0xFFFFFFFF;
        }
    }
}

V1Switch(VsParser(), NoVerify(), Report(), NoEgress(), NoCompute(), Emit()) main;
