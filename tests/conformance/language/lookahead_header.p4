// `x = pkt.lookahead<H>()` with x a header (a local variable or a struct member): every field
// of x is read from the bits ahead, x becomes valid, nothing is consumed (as p4c lowers it).
#include "lang_common.p4"

struct meta_t {
    h_t seen;
}

parser Parse(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        h_t peek = pkt.lookahead<h_t>();
        meta.seen = pkt.lookahead<h_t>();
        transition select(peek.a, peek.c) {
            (1, _): take;
            (_, 0xBEEF): take;
            default: reject;
        }
    }
    state take {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (meta.seen.isValid()) {
            hdr.h.b = meta.seen.a + 8w0x10;
            hdr.h.e = meta.seen.d;
        }
        sm.egress_spec = 1;
    }
}

#include "lang_blocks.p4"

V1Switch(Parse(), LangVerify(), Ing(), LangEgress(), LangCompute(), LangDeparser()) main;
