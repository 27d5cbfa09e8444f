// Constructor parameters: a constant (`AddK(8w5)`), an instance passed to another control
// (`Twice(add5)` applies it twice), a top-level control constructed in V1Switch
// (`CtorIngress(16w0x1234)`), and a control applied by type name (`Bump.apply(...)`).
#include "lang_common.p4"

struct meta_t { }

#include "lang_blocks.p4"

control adder_t(inout bit<8> x);

control AddK(inout bit<8> x)(bit<8> k) {
    apply { x = x + k; }
}

control Twice(inout bit<8> x)(adder_t step) {
    apply {
        step.apply(x);
        step.apply(x);
    }
}

control Bump(inout bit<8> x) {
    apply { x = x + 1; }
}

control CtorIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm)(bit<16> base) {
    AddK(8w5) add5;
    Twice(add5) add10;
    apply {
        sm.egress_spec = 1;
        add10.apply(hdr.h.a);
        Bump.apply(hdr.h.b);
        hdr.h.c = base;
    }
}

V1Switch(LangParser(), LangVerify(), CtorIngress(16w0x1234), LangEgress(), LangCompute(), LangDeparser()) main;
