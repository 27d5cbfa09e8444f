// Saturating arithmetic: |+| and |-| clamp at the type's bounds, for bit<W> and int<W>.
#include "lang_common.p4"

struct meta_t { }

#include "lang_blocks.p4"

control Saturating(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.h.b = hdr.h.a |+| 8w200;
        hdr.h.c = hdr.h.c |-| 16w10;
        int<8> s = (int<8>)hdr.h.a;
        s = s |-| 8s1;
        hdr.h.e = (bit<32>)(bit<8>)s;
        int<8> t = (int<8>)hdr.h.d[7:0];
        t = t |+| 8s100;
        hdr.h.d = (bit<32>)(bit<8>)t;
        sm.egress_spec = 1;
    }
}

V1Switch(LangParser(), LangVerify(), Saturating(), LangEgress(), LangCompute(), LangDeparser()) main;
