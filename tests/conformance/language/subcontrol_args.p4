// A sub-control instantiated in a control and applied with arguments: `in` parameters take
// the parameter's type (untyped literals become bit<8> here, so `++` knows their widths),
// `out`/`inout` parameters write through to the caller's fields.
#include "lang_common.p4"

struct meta_t { }

#include "lang_blocks.p4"

control Pack(out bit<32> word, in bit<8> b0, in bit<8> b1, in bit<8> b2, in bit<8> b3) {
    apply {
        word = b0 ++ b1 ++ b2 ++ b3;
    }
}

control Bump(inout bit<16> x, in bit<16> by) {
    apply {
        x = x + by;
    }
}

control SubArgs(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    Pack() pack;
    Bump() bump;
    apply {
        pack.apply(hdr.h.d, 10, 252, 129, 2);
        pack.apply(hdr.h.e, hdr.h.a, hdr.h.b, 0x7f, 1);
        bump.apply(hdr.h.c, 3);
        bump.apply(hdr.h.c, (bit<16>)hdr.h.a);
        sm.egress_spec = 1;
    }
}

V1Switch(LangParser(), LangVerify(), SubArgs(), LangEgress(), LangCompute(), LangDeparser()) main;
