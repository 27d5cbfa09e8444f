// header_union: the parser extracts one member; isValid() on members tells which; setValid()
// on another member invalidates the first; emit writes only the valid member.
#include "lang_common.p4"

header small_t {
    bit<8> x;
}

header big_t {
    bit<16> y;
}

header_union either_t {
    small_t small;
    big_t big;
}

struct union_headers_t {
    h_t h;
    either_t u;
}

struct meta_t { }

parser UnionParser(packet_in pkt, out union_headers_t hdr, inout meta_t meta,
                   inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.a) {
            8w1: parse_small;
            8w2: parse_big;
            default: accept;
        }
    }
    state parse_small { pkt.extract(hdr.u.small); transition accept; }
    state parse_big { pkt.extract(hdr.u.big); transition accept; }
}

control NoVerify(inout union_headers_t hdr, inout meta_t meta) { apply { } }
control NoEgress(inout union_headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control NoCompute(inout union_headers_t hdr, inout meta_t meta) { apply { } }
control EmitUnion(packet_out pkt, in union_headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
        pkt.emit(hdr.u);
    }
}

control Union(inout union_headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (hdr.u.small.isValid()) {
            hdr.h.b = 8w0x51;
            // turn the small member into the big one
            hdr.u.big.setValid();
            hdr.u.big.y = 16w0xB16;
        } else if (hdr.u.big.isValid()) {
            hdr.h.b = 8w0xB1;
        } else {
            hdr.h.b = 8w0x00;
        }
        sm.egress_spec = 1;
    }
}

V1Switch(UnionParser(), NoVerify(), Union(), NoEgress(), NoCompute(), EmitUnion()) main;
