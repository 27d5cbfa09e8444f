// p4c's STF dialect beyond packets: validity keys named `h.$valid` / `h.valid` (the key is
// `hdr.h.$valid$`, as p4c names it), entries named with `add ... = ID` and their direct
// counters read with `check_counter c($ID)`, `remove all` and `no_packet`.
#include "lang_common.p4"

struct meta_t { }

#include "lang_blocks.p4"

control Dialect(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    direct_counter(CounterType.packets_and_bytes) hits;
    action set_b(bit<8> v) { hdr.h.b = v; }
    table t {
        key = { hdr.h.isValid() : exact; hdr.h.a : ternary; }
        actions = { set_b; NoAction; }
        counters = hits;
        default_action = NoAction();
    }
    apply {
        t.apply();
        sm.egress_spec = 1;
    }
}

V1Switch(LangParser(), LangVerify(), Dialect(), LangEgress(), LangCompute(), LangDeparser()) main;
