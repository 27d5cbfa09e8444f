// varbit fields: a two-argument extract sizes the field per packet (h.a bytes), the deparser
// emits it at that size, a hash over the header covers exactly the extracted bits, and sizes
// beyond the declared maximum or past the packet's end set parser_error.
#include "lang_common.p4"

header opt_t {
    bit<8>     kind;
    varbit<48> data;
}

struct varbit_headers_t {
    h_t   h;
    opt_t opt;
}

struct meta_t { }

parser VarbitParser(packet_in pkt, out varbit_headers_t hdr, inout meta_t meta,
                    inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        pkt.extract(hdr.opt, (bit<32>)hdr.h.a * 8);
        transition accept;
    }
}

control NoVerify(inout varbit_headers_t hdr, inout meta_t meta) { apply { } }
control NoEgress(inout varbit_headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control NoCompute(inout varbit_headers_t hdr, inout meta_t meta) { apply { } }
control Emit(packet_out pkt, in varbit_headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
        pkt.emit(hdr.opt);
    }
}

control Measure(inout varbit_headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (sm.parser_error == error.HeaderTooShort) {
            hdr.h.b = 8w0xEE;
        } else if (sm.parser_error == error.PacketTooShort) {
            hdr.h.b = 8w0xDD;
        } else if (hdr.opt.isValid()) {
            hdr.h.b = 8w0x01;
            hash(hdr.h.c, HashAlgorithm.csum16, 16w0, { hdr.opt }, 32w65536);
        }
    }
}

V1Switch(VarbitParser(), NoVerify(), Measure(), NoEgress(), NoCompute(), Emit()) main;
