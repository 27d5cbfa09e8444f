// `for (x in ...)` loops inside actions: a range with run-time bounds runs as BMv2 jumps (also
// up to the type's largest value), constant ranges and lists are unrolled, `break` and
// `continue` work in both; and a `for ... in` over a header stack in an apply block.
#include "lang_common.p4"

header w_t {
    bit<8> v;
}

struct in_headers_t {
    h_t    h;
    w_t[3] w;
}

struct meta_t { }

parser InParser(packet_in pkt, out in_headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        pkt.extract(hdr.w.next);
        pkt.extract(hdr.w.next);
        pkt.extract(hdr.w.next);
        transition accept;
    }
}

control NoVerify(inout in_headers_t hdr, inout meta_t meta) { apply { } }
control NoEgress(inout in_headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control NoCompute(inout in_headers_t hdr, inout meta_t meta) { apply { } }
control Emit(packet_out pkt, in in_headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
        pkt.emit(hdr.w);
    }
}

control ForIn(inout in_headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    // d = a + (a + 1) + ... + b, run-time bounds (none when a > b); e counts the rounds
    action range_sum() {
        hdr.h.d = 0;
        hdr.h.e = 0;
        for (bit<8> i in hdr.h.a .. hdr.h.b) {
            hdr.h.d = hdr.h.d + (bit<32>)i;
            hdr.h.e = hdr.h.e + 1;
        }
    }
    // d = sum of the odd i in a .. b below 0x10 (continue skips the even ones, break stops)
    action range_odd() {
        hdr.h.d = 0;
        for (bit<8> i in hdr.h.a .. hdr.h.b) {
            if (i[0:0] == 0) {
                continue;
            }
            if (i >= 0x10) {
                break;
            }
            hdr.h.d = hdr.h.d + (bit<32>)i;
        }
    }
    // e = 1 + 10 + 100 + 1000 (constant range), d = a * 3 + 7 + b (list, last one run-time);
    // c = the first list element above 6
    action unrolled() {
        hdr.h.e = 0;
        bit<32> p = 1;
        for (bit<2> k in 0 .. 3) {
            hdr.h.e = hdr.h.e + p;
            p = p * 10;
        }
        hdr.h.d = 0;
        for (bit<32> x in { (bit<32>)hdr.h.a, (bit<32>)hdr.h.a, (bit<32>)hdr.h.a, 32w7, (bit<32>)hdr.h.b }) {
            hdr.h.d = hdr.h.d + x;
        }
        hdr.h.c = 0;
        for (bit<16> x in { 3, 5, 9, 12 }) {
            if (x > 6) {
                hdr.h.c = x;
                break;
            }
        }
    }
    table pick {
        key = { hdr.h.c : exact; }
        actions = { range_sum; range_odd; unrolled; }
        const default_action = range_sum;
        const entries = {
            16w1 : range_odd();
            16w2 : unrolled();
        }
    }
    apply {
        pick.apply();
        sm.egress_spec = 1;
        // every valid stack element's value, summed into the header's last byte of e
        bit<8> total = 0;
        for (w_t w in hdr.w) {
            if (w.isValid()) {
                total = total + w.v;
            }
        }
        hdr.h.e[7:0] = hdr.h.e[7:0] + total;
    }
}

V1Switch(InParser(), NoVerify(), ForIn(), NoEgress(), NoCompute(), Emit()) main;
