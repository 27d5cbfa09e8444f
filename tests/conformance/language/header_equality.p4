// `==` / `!=` on headers (equal when both are invalid, or both valid with equal fields) and on
// structs (member by member); a header-valued `?:`.
#include "lang_common.p4"

struct meta_t {
    bit<8> spare;
}

struct pair_t {
    bit<8> x;
    bit<8> y;
}

#include "lang_blocks.p4"

control Equality(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        bit<32> r = 0;
        h_t same = {hdr.h.a, hdr.h.b, hdr.h.c, hdr.h.d, 32w0};
        h_t unset;
        h_t unset_too;
        pair_t p = {hdr.h.a, hdr.h.b};
        pair_t q = {hdr.h.b, hdr.h.a};
        if (same == hdr.h) {
            r[0:0] = 1;
        }
        if (unset == unset_too) {
            r[1:1] = 1;
        }
        if (unset != hdr.h) {
            r[2:2] = 1;
        }
        if (p == q) {
            r[3:3] = 1;
        }
        h_t swapped = {hdr.h.b, hdr.h.a, hdr.h.c, hdr.h.d, 32w0};
        hdr.h = r == 32w6 ? swapped : hdr.h;
        hdr.h.e = r;
    }
}

V1Switch(LangParser(), LangVerify(), Equality(), LangEgress(), LangCompute(), LangDeparser()) main;
