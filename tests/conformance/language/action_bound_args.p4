// An action whose directional parameter is bound in each table's action list: every table
// gets its own copy, and STF (like simple_switch_CLI) names the original action.
#include "lang_common.p4"

struct meta_t { }

#include "lang_blocks.p4"

control Bound(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action set_byte(out bit<8> target, bit<8> value) {
        target = value;
    }
    table into_a {
        key = { hdr.h.c : exact; }
        actions = { set_byte(hdr.h.a); NoAction; }
        default_action = NoAction;
    }
    table into_b {
        key = { hdr.h.c : exact; }
        actions = { set_byte(hdr.h.b); NoAction; }
        default_action = NoAction;
    }
    apply {
        into_a.apply();
        into_b.apply();
        sm.egress_spec = 1;
    }
}

V1Switch(LangParser(), LangVerify(), Bound(), LangEgress(), LangCompute(), LangDeparser()) main;
