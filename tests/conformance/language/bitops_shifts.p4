// Bitwise & | ^ ~ with P4 precedence (& binds tighter than ^, ^ tighter than |), shifts by
// constants and by a run-time amount, and the arithmetic right shift of int<W>.
#include "lang_common.p4"

struct meta_t { }

#include "lang_blocks.p4"

control BitOps(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.h.b = hdr.h.a & 8w0xF0 | ~hdr.h.a & 8w0x0F ^ 8w0x01;
        hdr.h.c = hdr.h.c << 4;
        hdr.h.e = hdr.h.d >> hdr.h.a[2:0];
        int<32> s = (int<32>)hdr.h.d;
        hdr.h.d = (bit<32>)(s >> 4) ^ 32w0xFF;
        sm.egress_spec = 1;
    }
}

V1Switch(LangParser(), LangVerify(), BitOps(), LangEgress(), LangCompute(), LangDeparser()) main;
