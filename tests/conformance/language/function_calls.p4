// P4 functions called inside expressions: results feed larger expressions, evaluation runs
// left to right, `&&` / `||` / `?:` only evaluate the operand they need, and parameters are
// copied in and out (so two parameters bound to the same field do not see each other's writes).
#include "lang_common.p4"

struct meta_t {
    bit<8> spare;
}

#include "lang_blocks.p4"

// A call with a side effect: bumps its argument and returns the new value.
bit<8> bump(inout bit<8> x) {
    x = x + 1;
    return x;
}

bit<8> twice(in bit<8> v) {
    if (v > 100) {
        return 8w255;
    }
    return v + v;
}

void split(inout bit<32> x, out bit<32> y) {
    y = x + 1;
    if (x == 7) {
        y = 70;
    }
}

h_t with_e(in h_t x, in bit<32> e) {
    h_t y = x;
    y.e = e;
    return y;
}

control Calls(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        hdr.h.b = hdr.h.a + bump(hdr.h.a);
        hdr.h.c = (bit<16>)twice(hdr.h.a) + 16w1;
        bool never = false && bump(hdr.h.a) == 8w0;
        bool maybe = hdr.h.b == 8w3 || bump(hdr.h.a) == 8w0;
        hdr.h.e[7:0] = hdr.h.b > 8w100 ? 8w0 : bump(hdr.h.a);
        split(hdr.h.d, hdr.h.d);
        bump(hdr.h.a);
        hdr.h = hdr.h.b == 8w3 ? with_e(hdr.h, 32w0x33) : with_e(hdr.h, hdr.h.e);
    }
}

V1Switch(LangParser(), LangVerify(), Calls(), LangEgress(), LangCompute(), LangDeparser()) main;
