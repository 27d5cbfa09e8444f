// Assignment targets: a slice of a slice, a whole header at a run-time stack index (an index
// past the end changes nothing), and a slice of a field of a run-time stack element.
#include "lang_common.p4"

struct meta_t {
    bit<8> spare;
}

#include "lang_blocks.p4"

control Targets(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        hdr.h.c[11:4][3:0] = 4w0xA;
        h_t[2] s;
        s[0].setValid();
        s[0].b = 8w1;
        s[1].setValid();
        s[1].b = 8w2;
        s[hdr.h.a] = {0, 0xEE, 0, 0, 0};
        s[hdr.h.b].b[7:4] = 4w0x5;
        hdr.h.d[15:8] = s[0].b;
        hdr.h.d[7:0] = s[1].b;
    }
}

V1Switch(LangParser(), LangVerify(), Targets(), LangEgress(), LangCompute(), LangDeparser()) main;
