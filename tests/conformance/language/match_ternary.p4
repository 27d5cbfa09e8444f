// ternary keys over two fields; overlapping entries are ordered by priority.
#include "lang_common.p4"

struct meta_t { }

#include "lang_blocks.p4"

control Ternary(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action classify(bit<8> class) {
        hdr.h.b = class;
    }
    table classes {
        key = {
            hdr.h.a : ternary;
            hdr.h.c : ternary;
        }
        actions = { classify; NoAction; }
        default_action = classify(0xFF);
    }
    apply {
        sm.egress_spec = 1;
        classes.apply();
    }
}

V1Switch(LangParser(), LangVerify(), Ternary(), LangEgress(), LangCompute(), LangDeparser()) main;
