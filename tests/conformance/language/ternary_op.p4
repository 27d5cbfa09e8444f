// The conditional operator ?: (nested, right-associative) in assignments and arguments. A ?:
// nested in the else arm is parenthesized: p4c 1.2.5 reads `c1 ? x : c2 ? y : z` as `(c1 ? x : c2) ? y : z`.
#include "lang_common.p4"

struct meta_t { }

#include "lang_blocks.p4"

control Ternary(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.h.b = hdr.h.a > 8w0x80 ? 8w1 : (hdr.h.a == 8w0 ? 8w2 : 8w3);
        hdr.h.c = (hdr.h.d[0:0] == 1w1 ? hdr.h.c : 16w0) + 16w1;
        sm.egress_spec = hdr.h.a == 8w0 ? 9w2 : 9w1;
    }
}

V1Switch(LangParser(), LangVerify(), Ternary(), LangEgress(), LangCompute(), LangDeparser()) main;
