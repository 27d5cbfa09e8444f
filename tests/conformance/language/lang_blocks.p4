// Shared blocks for programs built on lang_common.p4: include after declaring `meta_t`.
// Parser extracts h; checksum controls and egress do nothing; the deparser emits h.
parser LangParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control LangVerify(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control LangEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { }
}

control LangCompute(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control LangDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
    }
}
