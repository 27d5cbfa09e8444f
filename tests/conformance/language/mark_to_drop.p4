// mark_to_drop(standard_metadata): the packet is dropped at the end of ingress.
#include "lang_common.p4"

struct meta_t { }

#include "lang_blocks.p4"

control Dropper(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action drop() {
        mark_to_drop(sm);
    }
    action forward(bit<9> port) {
        sm.egress_spec = port;
    }
    table filter {
        key = { hdr.h.a : exact; }
        actions = { drop; forward; }
        default_action = forward(1);
    }
    apply {
        filter.apply();
    }
}

V1Switch(LangParser(), LangVerify(), Dropper(), LangEgress(), LangCompute(), LangDeparser()) main;
