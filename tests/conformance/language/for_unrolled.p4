// `for` loops in a control's apply block, unrolled at compile time as p4c does for BMv2 (its
// pipelines cannot loop): a constant-bound C-style loop with `continue` and `break`, a loop
// variable used as a stack index and a shift amount, nested loops, `for (x in lo .. hi)` and
// `for (x in stack)`. (Lists, `for (x in {...})`, are for_in_loops.p4's.)
#include "lang_common.p4"

header w_t {
    bit<8> v;
}

struct unroll_headers_t {
    h_t    h;
    w_t[4] w;
}

struct meta_t { }

parser UnrollParser(packet_in pkt, out unroll_headers_t hdr, inout meta_t meta,
                    inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        pkt.extract(hdr.w.next);
        pkt.extract(hdr.w.next);
        pkt.extract(hdr.w.next);
        pkt.extract(hdr.w.next);
        transition accept;
    }
}

control NoVerify(inout unroll_headers_t hdr, inout meta_t meta) { apply { } }
control NoEgress(inout unroll_headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control NoCompute(inout unroll_headers_t hdr, inout meta_t meta) { apply { } }
control Emit(packet_out pkt, in unroll_headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
        pkt.emit(hdr.w);
    }
}

control Unrolled(inout unroll_headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        // d = sum of the stack values w[i] that are not 0xff, stopping at the first 0x00
        hdr.h.d = 0;
        for (bit<8> i = 0; i < 4; i = i + 1) {
            if (hdr.w[i].v == 0xff) {
                continue;
            }
            if (hdr.w[i].v == 0) {
                break;
            }
            hdr.h.d = hdr.h.d + (bit<32>)hdr.w[i].v;
        }
        // c = a with its bits reversed in the low byte (a slice bound must be compile-time
        // known, which a loop variable is not: shifts by it)
        hdr.h.c = 0;
        for (bit<8> k in 0 .. 7) {
            hdr.h.c = hdr.h.c | ((bit<16>)((hdr.h.a >> (7 - k)) & 1) << k);
        }
        // e = number of (i, j) pairs with j < i below 4, counted down
        hdr.h.e = 0;
        for (bit<4> n = 3; n != 15; n = n - 1) {
            for (bit<4> j = 0; j < n; j += 1) {
                hdr.h.e = hdr.h.e + 1;
            }
        }
        // b = a + the stack's values
        hdr.h.b = hdr.h.a;
        for (w_t x in hdr.w) {
            hdr.h.b = hdr.h.b + x.v;
        }
    }
}

V1Switch(UnrollParser(), NoVerify(), Unrolled(), NoEgress(), NoCompute(), Emit()) main;
