// Table forms p4c accepts and lowers in its own way for BMv2:
// - `counters = direct_counter(...)` constructed in the table (named by the property's @name);
// - `const default_action` on a table with an action_selector: BMv2 refuses a const default
//   there, so the default entry is written changeable (p4c leaves it out);
// - a table never applied, with direct resources: neither it nor they are emitted.
#include "lang_common.p4"

struct meta_t { }

#include "lang_blocks.p4"

control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    direct_counter(CounterType.packets) unused_ctr;
    action set_b(bit<8> v) { hdr.h.b = v; }
    action set_c(bit<16> v) { hdr.h.c = v; }
    table counted {
        key = { hdr.h.a : exact; }
        actions = { set_b; NoAction; }
        default_action = NoAction();
        @name("counted_hits") counters = direct_counter(CounterType.packets);
    }
    table spread {
        key = { hdr.h.a : exact; hdr.h.d : selector; }
        actions = { set_c; NoAction; }
        const default_action = NoAction();
        implementation = action_selector(HashAlgorithm.crc16, 32w16, 32w16);
    }
    table never {
        key = { hdr.h.a : exact; }
        actions = { set_c; NoAction; }
        counters = unused_ctr;
    }
    apply {
        counted.apply();
        spread.apply();
        sm.egress_spec = 1;
    }
}

V1Switch(LangParser(), LangVerify(), Ing(), LangEgress(), LangCompute(), LangDeparser()) main;
