// t.apply().hit and t.apply().miss as conditions.
#include "lang_common.p4"

struct meta_t { }

#include "lang_blocks.p4"

control HitMiss(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action mark(bit<8> v) { hdr.h.b = v; }
    table first_table {
        key = { hdr.h.a : exact; }
        actions = { mark; NoAction; }
        default_action = NoAction();
    }
    table second_table {
        key = { hdr.h.c : exact; }
        actions = { mark; NoAction; }
        default_action = NoAction();
    }
    apply {
        sm.egress_spec = 1;
        if (first_table.apply().hit) {
            hdr.h.d = 32w0x4117;
        } else {
            hdr.h.d = 32w0x5155;
        }
        if (second_table.apply().miss) {
            hdr.h.e = 32w0x5155;
        }
    }
}

V1Switch(LangParser(), LangVerify(), HitMiss(), LangEgress(), LangCompute(), LangDeparser()) main;
