// lpm keys: the longest matching prefix wins; a /0 entry catches the rest.
#include "lang_common.p4"

struct meta_t { }

#include "lang_blocks.p4"

control Lpm(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action route(bit<9> port, bit<8> tag) {
        sm.egress_spec = port;
        hdr.h.b = tag;
    }
    table routes {
        key = { hdr.h.d : lpm; }
        actions = { route; NoAction; }
        default_action = NoAction();
        size = 64;
    }
    apply {
        sm.egress_spec = 7;
        routes.apply();
    }
}

V1Switch(LangParser(), LangVerify(), Lpm(), LangEgress(), LangCompute(), LangDeparser()) main;
