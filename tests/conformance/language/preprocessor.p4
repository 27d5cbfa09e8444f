// The preprocessor: quoted #include (twice, guarded), object-like and function-like
// #define, #undef, #if/#elif/#else with defined() and arithmetic, #ifdef/#ifndef.
#include "lang_common.p4"
#include "preprocessor_defs.p4"
#include "preprocessor_defs.p4"

#define LEVEL 2
#define GREETING 8w0x47

struct meta_t { }

#include "lang_blocks.p4"

control Pre(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
#if defined(LEVEL) && LEVEL > 3
        hdr.h.b = 8w1;
#elif LEVEL * 2 == 4
        hdr.h.b = GREETING;
#else
        hdr.h.b = 8w3;
#endif
#ifdef NOT_DEFINED
        hdr.h.c = 16w1;
#else
        hdr.h.c = ADD_TWICE(hdr.h.c, 16w0x10);
#endif
#undef GREETING
#ifndef GREETING
        hdr.h.a = 8w0x55;
#endif
        sm.egress_spec = OUT_PORT;
    }
}

V1Switch(LangParser(), LangVerify(), Pre(), LangEgress(), LangCompute(), LangDeparser()) main;
