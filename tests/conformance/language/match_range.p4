// range keys (v1model match_kind range) together with an exact key.
#include "lang_common.p4"

struct meta_t { }

#include "lang_blocks.p4"

control Range(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action band(bit<8> id) {
        hdr.h.b = id;
    }
    table bands {
        key = {
            hdr.h.a : exact;
            hdr.h.c : range;
        }
        actions = { band; NoAction; }
        default_action = band(0);
    }
    apply {
        sm.egress_spec = 1;
        bands.apply();
    }
}

V1Switch(LangParser(), LangVerify(), Range(), LangEgress(), LangCompute(), LangDeparser()) main;
