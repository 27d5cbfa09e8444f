// `@priority(N)` on const entries, as p4c's BMv2 back end reads it: N is the BMv2 priority
// (the smaller number wins) and an entry without the annotation ranks by its position (1, 2, ...).
#include "lang_common.p4"

struct meta_t { }

#include "lang_blocks.p4"

control Annotated(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action set_b(bit<8> v) { hdr.h.b = v; }
    table ranked {
        key = { hdr.h.c : ternary; }
        actions = { set_b; NoAction; }
        const entries = {
            16w0x1111 &&& 16w0x000F : set_b(1) @priority(3);
            16w0x1181               : set_b(2);
            16w0x1181 &&& 16w0xF00F : set_b(3) @priority(1);
        }
        default_action = NoAction();
    }
    apply {
        ranked.apply();
        sm.egress_spec = 1;
    }
}

V1Switch(LangParser(), LangVerify(), Annotated(), LangEgress(), LangCompute(), LangDeparser()) main;
