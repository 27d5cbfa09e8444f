// implementation = action_selector(HashAlgorithm, size, width) with a selector key field.
#include "lang_common.p4"

struct meta_t { }

#include "lang_blocks.p4"

control Selector(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action_selector(HashAlgorithm.crc16, 32w64, 32w14) balancer;
    action send(bit<9> port) {
        sm.egress_spec = port;
        hdr.h.b = 8w0x5E;
    }
    table spread {
        key = {
            hdr.h.a : exact;
            hdr.h.d : selector;
        }
        actions = { send; NoAction; }
        implementation = balancer;
        size = 64;
    }
    apply {
        sm.egress_spec = 1;
        spread.apply();
    }
}

V1Switch(LangParser(), LangVerify(), Selector(), LangEgress(), LangCompute(), LangDeparser()) main;
