// @defaultonly and @tableonly on a table's actions, @name on an action and a table.
#include "lang_common.p4"

struct meta_t { }

#include "lang_blocks.p4"

control Annotated(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action on_miss() {
        hdr.h.b = 8w0x4D;
        sm.egress_spec = 1;
    }
    @name("forward_to") action fwd(bit<9> port) {
        hdr.h.b = 8w0x48;
        sm.egress_spec = port;
    }
    @name("lookup") table t {
        key = { hdr.h.a : exact; }
        actions = {
            @tableonly fwd;
            @defaultonly on_miss;
        }
        default_action = on_miss();
    }
    apply {
        t.apply();
    }
}

V1Switch(LangParser(), LangVerify(), Annotated(), LangEgress(), LangCompute(), LangDeparser()) main;
