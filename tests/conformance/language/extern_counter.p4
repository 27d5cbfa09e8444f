// counter(N, CounterType.packets_and_bytes) indexed by a header field; the control plane
// checks packet and byte counts.
#include "lang_common.p4"

struct meta_t { }

#include "lang_blocks.p4"

control Counting(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    counter(16, CounterType.packets_and_bytes) per_a;
    counter(4, CounterType.packets) total;
    apply {
        per_a.count((bit<32>)hdr.h.a);
        total.count(32w0);
        sm.egress_spec = 1;
    }
}

V1Switch(LangParser(), LangVerify(), Counting(), LangEgress(), LangCompute(), LangDeparser()) main;
