// if / else if / else chains, nested ifs, and if without braces.
#include "lang_common.p4"

struct meta_t { }

#include "lang_blocks.p4"

control Branches(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (hdr.h.a == 8w1) {
            hdr.h.b = 8w0x11;
        } else if (hdr.h.a == 8w2) {
            if (hdr.h.c > 16w100) {
                hdr.h.b = 8w0x22;
            } else {
                hdr.h.b = 8w0x23;
            }
        } else {
            hdr.h.b = 8w0x33;
        }
        if (hdr.h.d != 32w0)
            hdr.h.e = 32w1;
        else
            hdr.h.e = 32w2;
        sm.egress_spec = 1;
    }
}

V1Switch(LangParser(), LangVerify(), Branches(), LangEgress(), LangCompute(), LangDeparser()) main;
