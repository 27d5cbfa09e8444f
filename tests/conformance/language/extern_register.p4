// register<T>: read-modify-write per packet; the control plane reads and writes cells.
#include "lang_common.p4"

struct meta_t { }

#include "lang_blocks.p4"

control Registers(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    register<bit<32>>(8) cells;
    apply {
        bit<32> index = (bit<32>)hdr.h.a[2:0];
        bit<32> value;
        cells.read(value, index);
        value = value + 32w1;
        cells.write(index, value);
        hdr.h.d = value;
        sm.egress_spec = 1;
    }
}

V1Switch(LangParser(), LangVerify(), Registers(), LangEgress(), LangCompute(), LangDeparser()) main;
