// `for` loops inside actions that are not unrolled (BMv2 runs them with _jump_if_zero / _jump,
// as p4c compiles them): run-time bounds or `@nounroll`, nested loops, `break`, `continue`, and
// `return` out of a loop.
#include "lang_common.p4"

struct meta_t { }

#include "lang_blocks.p4"

control Loops(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    // d = 1 + 2 + ... + a
    action sum_to_a() {
        hdr.h.d = 0;
        for (bit<8> i = 1; i <= hdr.h.a; i = i + 1) {
            hdr.h.d = hdr.h.d + (bit<32>)i;
        }
    }
    // e = a * b by counting; c counts the odd i below 10 (continue skips the even ones)
    action nested() {
        hdr.h.e = 0;
        for (bit<8> i = 0; i < hdr.h.a; i = i + 1) {
            for (bit<8> j = 0; j < hdr.h.b; j = j + 1) {
                hdr.h.e = hdr.h.e + 1;
            }
        }
        hdr.h.c = 0;
        @nounroll for (bit<8> k = 0; k < 10; k = k + 1) {  // constant bounds, jumps all the same
            if (k[0:0] == 0) {
                continue;
            }
            hdr.h.c = hdr.h.c + 1;
        }
    }
    // d counts up to the first i with i == b (break), e marks a return out of the loop
    action stop_early() {
        hdr.h.d = 0;
        hdr.h.e = 0;
        bit<8> j;
        for (bit<8> i = 0, j = 100; i < hdr.h.a; i = i + 1, j = j - 1) {
            if (i == hdr.h.b) {
                break;
            }
            if (j == 95) {
                hdr.h.e = 0xeeee;
                return;
            }
            hdr.h.d = hdr.h.d + 1;
        }
    }
    table pick {
        key = { hdr.h.c : exact; }
        actions = { sum_to_a; nested; stop_early; }
        const default_action = sum_to_a;
        const entries = {
            16w1 : nested();
            16w2 : stop_early();
        }
    }
    apply {
        pick.apply();
        sm.egress_spec = 1;
    }
}

V1Switch(LangParser(), LangVerify(), Loops(), LangEgress(), LangCompute(), LangDeparser()) main;
