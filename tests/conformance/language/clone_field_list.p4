// clone_preserving_field_list(CloneType.I2E, session, index): the ingress clone goes to the
// session's port with the original packet and the metadata fields tagged @field_list(index).
#include "lang_common.p4"

struct meta_t {
    @field_list(1)
    bit<32> saved;
    bit<32> not_saved;
}

parser LangParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control LangVerify(inout headers_t hdr, inout meta_t meta) { apply { } }
control LangCompute(inout headers_t hdr, inout meta_t meta) { apply { } }
control LangDeparser(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

control CloneIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        meta.saved = 32w0x5A5A5A5A;
        meta.not_saved = 32w0x77777777;
        hdr.h.c = 16w0x1111;
        clone_preserving_field_list(CloneType.I2E, 32w5, 8w1);
        sm.egress_spec = 1;
    }
}

control CloneEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (sm.instance_type == 32w1) {
            hdr.h.b = 8w0xC1;
            hdr.h.d = meta.not_saved;
            hdr.h.e = meta.saved;
        }
    }
}

V1Switch(LangParser(), LangVerify(), CloneIngress(), CloneEgress(), LangCompute(), LangDeparser()) main;
