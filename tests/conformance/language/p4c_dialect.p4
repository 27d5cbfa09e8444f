// Forms p4c accepts that its test programs use: the include guards `_CORE_P4_` and
// `_V1_MODEL_P4_` tested with #ifdef.
#include "lang_common.p4"

#if defined(_CORE_P4_) && defined(_V1_MODEL_P4_)
#define GUARDS_SEEN 8w0x11
#else
#define GUARDS_SEEN 8w0xee
#endif

struct meta_t { }

#include "lang_blocks.p4"

control Dialect(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action mark() {
        hdr.h.b = GUARDS_SEEN;
        sm.egress_spec = 1;
    }
    table t {
        actions = { mark; }
        const default_action = mark;
    }
    apply { t.apply(); }
}

V1Switch(LangParser(), LangVerify(), Dialect(), LangEgress(), LangCompute(), LangDeparser()) main;
