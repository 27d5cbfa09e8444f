// default_action: a changeable default with arguments (replaced at run time by setdefault)
// and a const default_action.
#include "lang_common.p4"

struct meta_t { }

#include "lang_blocks.p4"

control Defaults(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action set_b(bit<8> v) { hdr.h.b = v; }
    action set_c(bit<16> v) { hdr.h.c = v; }
    table changeable {
        key = { hdr.h.a : exact; }
        actions = { set_b; }
        default_action = set_b(0x05);
    }
    table fixed {
        key = { hdr.h.a : exact; }
        actions = { set_c; }
        const default_action = set_c(0xC0C0);
    }
    apply {
        sm.egress_spec = 1;
        changeable.apply();
        fixed.apply();
    }
}

V1Switch(LangParser(), LangVerify(), Defaults(), LangEgress(), LangCompute(), LangDeparser()) main;
