// error declarations and verify(): a parser signals a program-defined error, ingress reads
// standard_metadata.parser_error and compares it with error.* constants.
#include "lang_common.p4"

error { BadVersion, Reserved }

struct meta_t { }

parser VerifyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                    inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        verify(hdr.h.a != 8w0xFF, error.Reserved);
        verify(hdr.h.a < 8w4, error.BadVersion);
        transition accept;
    }
}

control LangVerify(inout headers_t hdr, inout meta_t meta) { apply { } }
control LangEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control LangCompute(inout headers_t hdr, inout meta_t meta) { apply { } }
control LangDeparser(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

control CheckError(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (sm.parser_error == error.NoError) {
            hdr.h.b = 8w0x00;
        } else if (sm.parser_error == error.BadVersion) {
            hdr.h.b = 8w0xBD;
        } else if (sm.parser_error == error.Reserved) {
            hdr.h.b = 8w0xEE;
        } else {
            hdr.h.b = 8w0x99;
        }
        sm.egress_spec = 1;
    }
}

V1Switch(VerifyParser(), LangVerify(), CheckError(), LangEgress(), LangCompute(), LangDeparser()) main;
