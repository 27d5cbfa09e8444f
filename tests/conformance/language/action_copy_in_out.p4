// Directly called actions copy their directional arguments in and out: inside the body a
// parameter is its own variable (writing it does not change the argument until the action
// ends), `exit` still copies out first, and a slice argument is written back as a slice.
#include "lang_common.p4"

struct meta_t {
    bit<8> spare;
}

#include "lang_blocks.p4"

control CopyInOut(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action alias(inout bit<8> x) {
        x = 8w1;
        hdr.h.b = x + hdr.h.a;
    }
    action both(inout bit<32> x, out bit<32> y) {
        y = x + 1;
        if (x == 32w7) {
            y = 32w70;
        }
    }
    action nibble(inout bit<4> x) {
        x = x + 4w1;
    }
    action leave(inout bit<16> x) {
        x = 16w0xE;
        exit;
    }
    apply {
        sm.egress_spec = 1;
        alias(hdr.h.a);
        nibble(hdr.h.b[7:4]);
        both(hdr.h.d, hdr.h.d);
        if (hdr.h.e == 32w1) {
            leave(hdr.h.c);
        }
        hdr.h.c = 16w0xC;
    }
}

V1Switch(LangParser(), LangVerify(), CopyInOut(), LangEgress(), LangCompute(), LangDeparser()) main;
