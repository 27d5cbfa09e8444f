// Actions with directional parameters (in, out, inout) called from the apply block, and
// action-data (directionless) parameters supplied by table entries.
#include "lang_common.p4"

struct meta_t { }

#include "lang_blocks.p4"

control Actions(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action add_to(inout bit<8> target, in bit<8> amount) {
        target = target + amount;
    }
    action widen(in bit<8> v, out bit<16> result) {
        result = v ++ v;
    }
    action set_fields(bit<32> value, bit<9> port) {
        hdr.h.e = value;
        sm.egress_spec = port;
    }
    table data {
        key = { hdr.h.a : exact; }
        actions = { set_fields; NoAction; }
        default_action = NoAction();
    }
    apply {
        sm.egress_spec = 1;
        add_to(hdr.h.b, 8w3);
        add_to(hdr.h.b, hdr.h.a);
        widen(hdr.h.a, hdr.h.c);
        data.apply();
    }
}

V1Switch(LangParser(), LangVerify(), Actions(), LangEgress(), LangCompute(), LangDeparser()) main;
