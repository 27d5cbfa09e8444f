// Local variables of tuple type: initialized from a list, copied whole, elements read and
// written with constant indices.
#include "lang_common.p4"

struct meta_t { }

#include "lang_blocks.p4"

control Tuples(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        tuple<bit<8>, bit<16>> t = { hdr.h.a, hdr.h.c };
        tuple<bit<8>, bit<16>> u;
        u = t;
        u[0] = u[0] + 1;
        hdr.h.b = u[0];
        hdr.h.c = t[1] + u[1];
        sm.egress_spec = 1;
    }
}

V1Switch(LangParser(), LangVerify(), Tuples(), LangEgress(), LangCompute(), LangDeparser()) main;
