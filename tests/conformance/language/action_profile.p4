// implementation = action_profile(N): entries point at shared action members.
#include "lang_common.p4"

struct meta_t { }

#include "lang_blocks.p4"

control Profile(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action_profile(32w16) shared;
    action send(bit<9> port, bit<8> tag) {
        sm.egress_spec = port;
        hdr.h.b = tag;
    }
    table indirect {
        key = { hdr.h.a : exact; }
        actions = { send; NoAction; }
        implementation = shared;
        size = 16;
    }
    apply {
        sm.egress_spec = 1;
        indirect.apply();
    }
}

V1Switch(LangParser(), LangVerify(), Profile(), LangEgress(), LangCompute(), LangDeparser()) main;
