// Concatenation ++, slices as values and as assignment targets, and casts that narrow,
// widen (zero-extend) and sign-extend through int<W>.
#include "lang_common.p4"

struct meta_t { }

#include "lang_blocks.p4"

control ConcatSlice(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        bit<8> a = hdr.h.a;
        hdr.h.c = a ++ hdr.h.b;
        hdr.h.e = hdr.h.d[15:0] ++ hdr.h.d[31:16];
        hdr.h.d[7:4] = 4w0xA;
        hdr.h.d[31:24] = (bit<8>)hdr.h.e;
        hdr.h.b = (bit<8>)((bit<16>)(int<16>)(int<8>)a >> 8);
        hdr.h.a = (bit<4>)a ++ 4w0;
        sm.egress_spec = 1;
    }
}

V1Switch(LangParser(), LangVerify(), ConcatSlice(), LangEgress(), LangCompute(), LangDeparser()) main;
