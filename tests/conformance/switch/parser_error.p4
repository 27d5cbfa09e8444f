// A too-short packet sets standard_metadata.parser_error; ingress still runs.
#include <core.p4>
#include <v1model.p4>
#include "common_h.p4"

header t_t { bit<32> x; }
struct all_t { h_t h; t_t t; }
struct meta_t { }

parser P(packet_in pkt, out all_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition select(hdr.h.a) { 1: more; default: accept; } }
    state more { pkt.extract(hdr.t); transition accept; }
}
control VC(inout all_t hdr, inout meta_t m) { apply { } }
control I(inout all_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        if (sm.parser_error == error.PacketTooShort) {
            hdr.h.b = 0xee;
        }
        sm.egress_spec = 1;
    }
}
control E(inout all_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout all_t hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in all_t hdr) { apply { pkt.emit(hdr.h); pkt.emit(hdr.t); } }

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
