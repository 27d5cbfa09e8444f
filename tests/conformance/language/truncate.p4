// truncate(length): only the first length bytes of the outgoing packet are sent.
#include "lang_common.p4"

struct meta_t { }

#include "lang_blocks.p4"

control Truncating(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.h.b = 8w0x7C;
        if (hdr.h.a == 8w1) {
            truncate(32w14);
        }
        sm.egress_spec = 1;
    }
}

V1Switch(LangParser(), LangVerify(), Truncating(), LangEgress(), LangCompute(), LangDeparser()) main;
