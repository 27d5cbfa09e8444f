// resubmit_preserving_field_list(index): the original packet goes through ingress again
// (instance_type 6) with the @field_list(index) metadata fields kept.
#include "lang_common.p4"

struct meta_t {
    @field_list(1)
    bit<32> saved;
}

#include "lang_blocks.p4"

control Resubmitting(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (sm.instance_type == 32w0) {
            meta.saved = hdr.h.d + 32w1;
            hdr.h.b = 8w0xFF;
            resubmit_preserving_field_list(8w1);
            sm.egress_spec = 1;
        } else {
            hdr.h.b = 8w0x5B;
            hdr.h.e = meta.saved;
            sm.egress_spec = 2;
        }
    }
}

V1Switch(LangParser(), LangVerify(), Resubmitting(), LangEgress(), LangCompute(), LangDeparser()) main;
