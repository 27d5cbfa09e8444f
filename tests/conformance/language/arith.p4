// Arithmetic on bit<W>: + - * with wrap-around, unary minus, width-typed literals in every
// base, and constant expressions (/ and % folded at compile time).
#include "lang_common.p4"

struct meta_t { }

#include "lang_blocks.p4"

const bit<32> QUOT = 100 / 7;
const bit<32> REM = 100 % 7;

control Arith(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.h.b = hdr.h.a * 8w3 + 8w1;
        hdr.h.c = hdr.h.c - 16w5;
        hdr.h.d = -hdr.h.d;
        hdr.h.e = QUOT * 32w1_000 + REM + 32w0b101 + 32w0o17 + 32w0x1_0;
        sm.egress_spec = 1;
    }
}

V1Switch(LangParser(), LangVerify(), Arith(), LangEgress(), LangCompute(), LangDeparser()) main;
