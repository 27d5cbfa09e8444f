// v1model API revision 20200408 chosen by the program: PortId_t, standard_metadata's ports of
// that type, and counters/registers indexed by a type of the program's choice.
#include <core.p4>
#define V1MODEL_VERSION 20200408
#include <v1model.p4>

header h_t {
    bit<8>  a;
    bit<8>  b;
    bit<16> c;
    bit<32> d;
    bit<32> e;
}

struct headers_t { h_t h; }
struct meta_t { PortId_t port; }

#include "lang_blocks.p4"

control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    register<bit<32>, bit<8>>(16) seen;
    counter<bit<8>>(16, CounterType.packets) per_a;
    action out_to(PortId_t port) { sm.egress_spec = port; }
    table route {
        key = { hdr.h.a : exact; }
        actions = { out_to; }
        default_action = out_to(2);
    }
    apply {
        meta.port = sm.ingress_port;
        bit<32> before;
        seen.read(before, hdr.h.a);
        seen.write(hdr.h.a, before + 1);
        per_a.count(hdr.h.a);
        hdr.h.d = before;
        hdr.h.c = (bit<16>)meta.port;
        route.apply();
    }
}

V1Switch(LangParser(), LangVerify(), Ing(), LangEgress(), LangCompute(), LangDeparser()) main;
