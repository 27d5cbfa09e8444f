// random(result, lo, hi): a one-value range is deterministic; a wider range stays in bounds.
#include "lang_common.p4"

struct meta_t { }

#include "lang_blocks.p4"

control Randomness(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        bit<8> fixed;
        random(fixed, 8w7, 8w7);
        bit<16> ranged;
        random(ranged, 16w100, 16w200);
        hdr.h.b = fixed;
        hdr.h.c = (ranged >= 16w100 && ranged <= 16w200) ? 16w0x600D : 16w0xBAD0;
        sm.egress_spec = 1;
    }
}

V1Switch(LangParser(), LangVerify(), Randomness(), LangEgress(), LangCompute(), LangDeparser()) main;
