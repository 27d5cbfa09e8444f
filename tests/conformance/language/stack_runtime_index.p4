// Run-time stack indices, lowered element by element as p4c does for BMv2; past the end reads
// give 0, writes, `inout` arguments, header copies and setInvalid() do nothing, isValid() is false.
#include "lang_common.p4"

struct meta_t {
    bit<8> spare;
}

#include "lang_blocks.p4"

control RuntimeIndex(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action add_one(inout bit<8> x) {
        x = x + 1;
    }
    apply {
        sm.egress_spec = 1;
        h_t[2] s;
        s[0].setValid();
        s[0].b = 8w10;
        s[1].setValid();
        s[1].b = 8w20;
        add_one(s[hdr.h.a].b);
        s[hdr.h.a].b = s[hdr.h.a].b + 8w5;
        hdr.h.b = s[hdr.h.a].b;
        hdr.h.c[7:0] = s[0].b;
        hdr.h.c[15:8] = s[1].b;
        if (s[hdr.h.a].isValid()) {
            hdr.h.d = 32w1;
        }
        h_t picked = s[hdr.h.a];
        // a field of an invalid header reads as an unspecified value (simple_switch: whatever its
        // reused PHV held from an earlier packet), so only a valid `picked` is read
        hdr.h.e[7:0] = picked.isValid() ? picked.b : 8w0;
        s[hdr.h.a].setInvalid();
        if (!s[1].isValid()) {
            hdr.h.e[15:8] = 8w0xFF;
        }
    }
}

V1Switch(LangParser(), LangVerify(), RuntimeIndex(), LangEgress(), LangCompute(), LangDeparser()) main;
