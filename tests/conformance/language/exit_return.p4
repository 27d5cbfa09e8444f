// exit (ends the control, here ingress, from an action or the apply block; egress still runs)
// and return (leaves the apply block early).
#include "lang_common.p4"

struct meta_t { }

#include "lang_blocks.p4"

control MarkEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.h.e = 32w0xE;
    }
}

control ExitReturn(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action stop_here() {
        hdr.h.b = 8w0xE1;
        exit;
    }
    apply {
        sm.egress_spec = 1;
        if (hdr.h.a == 8w1) {
            stop_here();
            hdr.h.b = 8w0xBA;
        }
        if (hdr.h.a == 8w2) {
            hdr.h.c = 16w2;
            return;
        }
        if (hdr.h.a == 8w3) {
            hdr.h.c = 16w3;
            exit;
        }
        hdr.h.b = 8w0x0F;
        hdr.h.c = 16w0xF;
    }
}

V1Switch(LangParser(), LangVerify(), ExitReturn(), MarkEgress(), LangCompute(), LangDeparser()) main;
