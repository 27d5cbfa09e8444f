// A varbit size that is not a whole number of bytes: BMv2's extract_VL fails with
// ParserInvalidArgument (a whole-byte size above the maximum is HeaderTooShort instead).
#include "lang_common.p4"

header opt_t {
    varbit<16> data;
}

struct meta_t { }

struct all_t {
    h_t   h;
    opt_t opt;
}

parser SizedParser(packet_in pkt, out all_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        pkt.extract(hdr.opt, (bit<32>)hdr.h.a);   // h.a is a size in bits here
        transition accept;
    }
}

control SizedIngress(inout all_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (sm.parser_error == error.ParserInvalidArgument) {
            hdr.h.b = 0x66;
        } else if (sm.parser_error == error.HeaderTooShort) {
            hdr.h.b = 0x44;
        } else if (sm.parser_error == error.NoError) {
            hdr.h.b = 0x11;
        }
        sm.egress_spec = 1;
    }
}

control SizedNothing(inout all_t hdr, inout meta_t meta) { apply { } }
control SizedEgress(inout all_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control SizedDeparser(packet_out pkt, in all_t hdr) {
    apply {
        pkt.emit(hdr.h);
        pkt.emit(hdr.opt);
    }
}

V1Switch(SizedParser(), SizedNothing(), SizedIngress(), SizedEgress(), SizedNothing(), SizedDeparser()) main;
