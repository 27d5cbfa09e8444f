// verify_checksum in the verify control sets standard_metadata.checksum_error on a mismatch;
// update_checksum in the compute control rewrites the checksum field (csum16).
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
        verify_checksum(hdr.h.isValid(), { hdr.h.a, hdr.h.b, hdr.h.d, hdr.h.e }, hdr.h.c,
                        HashAlgorithm.csum16);
    }
}

control Report(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.h.b = (bit<8>)sm.checksum_error;
        sm.egress_spec = 1;
    }
}

control Update(inout headers_t hdr, inout meta_t meta) {
    apply {
        update_checksum(hdr.h.isValid(), { hdr.h.a, hdr.h.b, hdr.h.d, hdr.h.e }, hdr.h.c,
                        HashAlgorithm.csum16);
    }
}

V1Switch(LangParser(), Verify(), Report(), LangEgress(), Update(), LangDeparser()) main;
