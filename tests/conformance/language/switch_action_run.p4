// switch (t.apply().action_run) with a fall-through label group, a single label and default.
#include "lang_common.p4"

struct meta_t { }

#include "lang_blocks.p4"

control Switch(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action first() { hdr.h.b = 8w1; }
    action second() { hdr.h.b = 8w2; }
    action third() { hdr.h.b = 8w3; }
    action other() { hdr.h.b = 8w4; }
    table choose {
        key = { hdr.h.a : exact; }
        actions = { first; second; third; other; }
        default_action = other();
    }
    apply {
        sm.egress_spec = 1;
        switch (choose.apply().action_run) {
            first:
            second: {
                hdr.h.c = 16w0x1212;
            }
            third: {
                hdr.h.c = 16w0x3333;
            }
            default: {
                hdr.h.c = 16w0xDEF0;
            }
        }
    }
}

V1Switch(LangParser(), LangVerify(), Switch(), LangEgress(), LangCompute(), LangDeparser()) main;
