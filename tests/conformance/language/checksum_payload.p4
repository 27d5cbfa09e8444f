// verify_checksum_with_payload / update_checksum_with_payload: the checksum also covers the
// bytes after the parsed headers.
#include "lang_common.p4"

struct meta_t { }

parser LangParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control LangEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control LangDeparser(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

control Verify(inout headers_t hdr, inout meta_t meta) {
    apply {
        verify_checksum_with_payload(true, { hdr.h.a, hdr.h.b }, hdr.h.c, HashAlgorithm.csum16);
    }
}

control Report(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.h.d = (bit<32>)sm.checksum_error;
        sm.egress_spec = 1;
    }
}

control Update(inout headers_t hdr, inout meta_t meta) {
    apply {
        update_checksum_with_payload(true, { hdr.h.a, hdr.h.b }, hdr.h.c, HashAlgorithm.csum16);
    }
}

V1Switch(LangParser(), Verify(), Report(), LangEgress(), Update(), LangDeparser()) main;
