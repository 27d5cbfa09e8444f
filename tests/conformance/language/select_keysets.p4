// select over a tuple of fields with exact values, masks (&&&), ranges (..), don't-care (_)
// and default, and a single-field select; the chosen state is written into h.e.
#include "lang_common.p4"

struct meta_t {
    bit<32> path;
}

parser SelectParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                    inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.a, hdr.h.c) {
            (8w1, 16w0x0800): exact_pair;
            (8w2, 16w0x8100 &&& 16w0xEFFF): masked;
            (8w3, 16w10 .. 16w20): ranged;
            (8w4, _): any_c;
            default: single;
        }
    }
    state exact_pair { meta.path = 1; transition accept; }
    state masked { meta.path = 2; transition accept; }
    state ranged { meta.path = 3; transition accept; }
    state any_c { meta.path = 4; transition accept; }
    state single {
        transition select(hdr.h.b) {
            8w0xF0 &&& 8w0xF0: high_b;
            0 .. 15: low_b;
            _: accept;
        }
    }
    state high_b { meta.path = 5; transition accept; }
    state low_b { meta.path = 6; transition accept; }
}

control LangVerify(inout headers_t hdr, inout meta_t meta) { apply { } }
control LangEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control LangCompute(inout headers_t hdr, inout meta_t meta) { apply { } }
control LangDeparser(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

control RecordPath(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.h.e = meta.path;
        sm.egress_spec = 1;
    }
}

V1Switch(SelectParser(), LangVerify(), RecordPath(), LangEgress(), LangCompute(), LangDeparser()) main;
