// varbit local variables (as p4c: each a metadata header of its own, copied with BMv2's
// assign_VL, `set` in a parser): declared in a parser, a control and an action, assigned from
// a header's varbit field (taking its size along) and written back, so the emitted headers
// change sizes. Option x (a bytes) and option y (c bytes) follow h; b picks the operation.
#include "lang_common.p4"

header opt_t {
    varbit<32> data;
}

struct vb_headers_t {
    h_t   h;
    opt_t x;
    opt_t y;
}

struct meta_t { }

parser VbParser(packet_in pkt, out vb_headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    varbit<32> first;
    state start {
        pkt.extract(hdr.h);
        pkt.extract(hdr.x, (bit<32>)hdr.h.a * 8);
        pkt.extract(hdr.y, (bit<32>)hdr.h.c * 8);
        transition select(hdr.h.b) {
            3: copy_in_parser;
            default: accept;
        }
    }
    // b == 3: y becomes a copy of x already in the parser (through a parser local)
    state copy_in_parser {
        first = hdr.x.data;
        hdr.y.data = first;
        transition accept;
    }
}

control NoVerify(inout vb_headers_t hdr, inout meta_t meta) { apply { } }
control NoEgress(inout vb_headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control NoCompute(inout vb_headers_t hdr, inout meta_t meta) { apply { } }
control Emit(packet_out pkt, in vb_headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
        pkt.emit(hdr.x);
        pkt.emit(hdr.y);
    }
}

control VbIngress(inout vb_headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    varbit<32> saved;
    // b == 1: swap x and y through an action local
    action swap() {
        varbit<32> tmp = hdr.x.data;
        hdr.x.data = hdr.y.data;
        hdr.y.data = tmp;
    }
    table pick {
        key = { hdr.h.b : exact; }
        actions = { swap; NoAction; }
        const default_action = NoAction;
        const entries = {
            1 : swap();
        }
    }
    apply {
        sm.egress_spec = 1;
        pick.apply();
        // b == 2: x is replaced by y (through the control local); y's header is dropped
        if (hdr.h.b == 2) {
            saved = hdr.y.data;
            hdr.x.data = saved;
            hdr.y.setInvalid();
        }
    }
}

V1Switch(VbParser(), NoVerify(), VbIngress(), NoEgress(), NoCompute(), Emit()) main;
