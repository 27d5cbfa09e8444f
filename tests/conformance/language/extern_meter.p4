// meter(N, MeterType.bytes): execute_meter writes the color; unconfigured meters are green (0).
#include "lang_common.p4"

struct meta_t { }

#include "lang_blocks.p4"

control Metering(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    meter(32w4, MeterType.bytes) policer;
    apply {
        bit<2> color;
        policer.execute_meter((bit<32>)hdr.h.a, color);
        hdr.h.b = (bit<8>)color + 8w0x10;
        sm.egress_spec = color == 2w0 ? 9w1 : 9w2;
    }
}

V1Switch(LangParser(), LangVerify(), Metering(), LangEgress(), LangCompute(), LangDeparser()) main;
