// An unsized literal takes the type of the other operand (of `?:` too), not the type the
// context casts the result to: (bit<16>)-(c ? 2 : 3w1) negates in bit<3>.
#include "lang_common.p4"

struct meta_t {
    bit<8> spare;
}

#include "lang_blocks.p4"

control Literals(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        hdr.h.c = (bit<16>)-(hdr.h.a == 8w1 ? 2 : 3w1);
        hdr.h.b = (bit<8>)(5 / 1w1);
        hdr.h.d = (bit<32>)(3 + 4w14);
        hdr.h.e = (bit<32>)(hdr.h.a == 8w1 ? 32w7 : 9);
    }
}

V1Switch(LangParser(), LangVerify(), Literals(), LangEgress(), LangCompute(), LangDeparser()) main;
