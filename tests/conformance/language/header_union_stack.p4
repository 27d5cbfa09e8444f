// A stack of header unions (BMv2 header_union_stacks): `.next.<member>` extracts into the next
// union and leaves its other members invalid; elements are read, written and emitted in order.
#include "lang_common.p4"

header opt_a_t {
    bit<8> kind;
    bit<8> v;
}

header opt_b_t {
    bit<8>  kind;
    bit<16> w;
}

header_union opt_u {
    opt_a_t a;
    opt_b_t b;
}

struct us_headers_t {
    h_t      h;
    opt_u[3] opts;
}

struct meta_t { }

parser UsParser(packet_in pkt, out us_headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition next_opt;
    }
    state next_opt {
        transition select(pkt.lookahead<bit<8>>()) {
            8w1: parse_a;
            8w2: parse_b;
            default: accept;
        }
    }
    state parse_a {
        pkt.extract(hdr.opts.next.a);
        transition next_opt;
    }
    state parse_b {
        pkt.extract(hdr.opts.next.b);
        transition next_opt;
    }
}

control NoVerify(inout us_headers_t hdr, inout meta_t meta) { apply { } }
control NoEgress(inout us_headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control NoCompute(inout us_headers_t hdr, inout meta_t meta) { apply { } }
control Emit(packet_out pkt, in us_headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
        pkt.emit(hdr.opts);
    }
}

control Inspect(inout us_headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        hdr.h.a = hdr.opts[0].a.isValid() ? 8w1 : 8w0;
        hdr.h.b = hdr.opts[1].b.isValid() ? 8w1 : 8w0;
        if (hdr.opts[1].b.isValid()) {
            hdr.h.c = hdr.opts[1].b.w;
            hdr.opts[1].b.w = 16w0xBEEF;
        }
        if (hdr.opts[2].a.isValid()) {
            hdr.opts[2].a.v = hdr.opts[2].a.v + 1;
        }
    }
}

V1Switch(UsParser(), NoVerify(), Inspect(), NoEgress(), NoCompute(), Emit()) main;
