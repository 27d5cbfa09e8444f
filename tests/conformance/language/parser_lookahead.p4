// packet_in.lookahead<T>(): peek at bits without consuming them, in a select and into a
// variable; then extract the same bits as a header.
#include "lang_common.p4"

header tag_t {
    bit<8> kind;
    bit<8> len;
}

struct lookahead_headers_t {
    tag_t tag;
    h_t h;
}

struct meta_t {
    bit<16> peeked;
}

parser LookParser(packet_in pkt, out lookahead_headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t sm) {
    state start {
        meta.peeked = pkt.lookahead<bit<16>>();
        transition select(pkt.lookahead<bit<8>>()) {
            8w0x7A: parse_tag;
            default: parse_h;
        }
    }
    state parse_tag {
        pkt.extract(hdr.tag);
        transition parse_h;
    }
    state parse_h {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control NoVerify(inout lookahead_headers_t hdr, inout meta_t meta) { apply { } }
control NoEgress(inout lookahead_headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control NoCompute(inout lookahead_headers_t hdr, inout meta_t meta) { apply { } }
control Emit(packet_out pkt, in lookahead_headers_t hdr) {
    apply {
        pkt.emit(hdr.tag);
        pkt.emit(hdr.h);
    }
}

control Look(inout lookahead_headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.h.c = meta.peeked;
        if (hdr.tag.isValid()) {
            hdr.tag.len = 8w0xAA;
            sm.egress_spec = 2;
        } else {
            sm.egress_spec = 1;
        }
    }
}

V1Switch(LookParser(), NoVerify(), Look(), NoEgress(), NoCompute(), Emit()) main;
