// recirculate_preserving_field_list(index) in egress: the deparsed packet enters ingress
// again (instance_type 4) with the @field_list(index) metadata fields kept.
#include "lang_common.p4"

struct meta_t {
    @field_list(1)
    bit<32> saved;
}

parser LangParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control LangVerify(inout headers_t hdr, inout meta_t meta) { apply { } }
control LangCompute(inout headers_t hdr, inout meta_t meta) { apply { } }
control LangDeparser(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

control RecircIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (sm.instance_type == 32w4) {
            hdr.h.b = (bit<8>)meta.saved;
            sm.egress_spec = 2;
        } else {
            sm.egress_spec = 1;
        }
    }
}

control RecircEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        // egress sees instance_type 0 on both passes (ingress marks unicast NORMAL); the
        // preserved field tells the passes apart
        if (meta.saved != 32w0x33) {
            meta.saved = 32w0x33;
            hdr.h.a = 8w0x99;
            recirculate_preserving_field_list(8w1);
        }
    }
}

V1Switch(LangParser(), LangVerify(), RecircIngress(), RecircEgress(), LangCompute(), LangDeparser()) main;
