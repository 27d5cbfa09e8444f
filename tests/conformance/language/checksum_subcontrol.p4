// Controls applied from the checksum controls (and the deparser): their verify_checksum /
// update_checksum (emit) calls belong to the block that applies them, with the callee's
// parameters bound to the caller's headers, as the same calls written there (checksum.p4).
#include "lang_common.p4"

struct meta_t { }

parser LangParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control LangEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control EmitH(packet_out pkt, in h_t h) { apply { pkt.emit(h); } }
control LangDeparser(packet_out pkt, in headers_t hdr) { apply { EmitH.apply(pkt, hdr.h); } }

control CheckH(in h_t h) {
    apply {
        verify_checksum(h.isValid(), { h.a, h.b, h.d, h.e }, h.c, HashAlgorithm.csum16);
    }
}

control Verify(inout headers_t hdr, inout meta_t meta) {
    CheckH() check;
    apply { check.apply(hdr.h); }
}

control Report(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.h.b = (bit<8>)sm.checksum_error;
        sm.egress_spec = 1;
    }
}

control FillC(inout h_t h) {
    apply {
        update_checksum(h.isValid(), { h.a, h.b, h.d, h.e }, h.c, HashAlgorithm.csum16);
    }
}

control Update(inout headers_t hdr, inout meta_t meta) {
    apply { FillC.apply(hdr.h); }
}

V1Switch(LangParser(), Verify(), Report(), LangEgress(), Update(), LangDeparser()) main;
