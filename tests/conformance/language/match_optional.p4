// optional keys (v1model match_kind optional): an entry either matches a field exactly or
// ignores it.
#include "lang_common.p4"

struct meta_t { }

#include "lang_blocks.p4"

control Optional(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action pick(bit<9> port) {
        sm.egress_spec = port;
    }
    table picks {
        key = {
            hdr.h.a : optional;
            hdr.h.b : optional;
        }
        actions = { pick; NoAction; }
        default_action = pick(1);
    }
    apply {
        picks.apply();
    }
}

V1Switch(LangParser(), LangVerify(), Optional(), LangEgress(), LangCompute(), LangDeparser()) main;
