// Direct counters and direct meters attached to a table (counters = ..., meters = ...);
// the meter color is read in the action. An unconfigured meter marks every packet green (0).
#include "lang_common.p4"

struct meta_t { }

#include "lang_blocks.p4"

control Direct(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    direct_counter(CounterType.packets_and_bytes) hits;
    direct_meter<bit<8>>(MeterType.packets) rate;
    action metered(bit<9> port) {
        rate.read(hdr.h.b);
        hdr.h.c = 16w0x600D;
        sm.egress_spec = port;
    }
    action unmetered() {
        hdr.h.c = 16w0xBAD0;
        sm.egress_spec = 1;
    }
    table watched {
        key = { hdr.h.a : exact; }
        actions = { metered; unmetered; }
        default_action = unmetered();
        counters = hits;
        meters = rate;
    }
    apply {
        watched.apply();
    }
}

V1Switch(LangParser(), LangVerify(), Direct(), LangEgress(), LangCompute(), LangDeparser()) main;
