// Hand-written BMv2 JSON in the sibling .json (the suite runs it instead of compiling this
// program, which says the same in P4). It checks, as simple_switch does them:
// - the packet-length register: remove_header (setInvalid) of a valid header shrinks it, and
//   egress reads standard_metadata.packet_length from it;
// - an ingress clone is the received packet parsed again with all metadata reset (so
//   ingress_port is 0 in its egress) and the register back at the received length;
// - older p4c's default transition written as {"value": "default"} without a "type".
#include <core.p4>
#include <v1model.p4>
#include "common_h.p4"

header h2_t { bit<16> x; }
struct hdrs_t { h_t h; h2_t h2; }
struct meta_t { }

parser P(packet_in pkt, out hdrs_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.a) { 1: parse_h2; default: accept; }
    }
    state parse_h2 { pkt.extract(hdr.h2); transition accept; }
}
control VC(inout hdrs_t hdr, inout meta_t m) { apply { } }
control I(inout hdrs_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        hdr.h2.setInvalid();
        clone(CloneType.I2E, 5);
    }
}
control E(inout hdrs_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        hdr.h.b = (bit<8>) sm.packet_length;
        hdr.h.c = (bit<16>) sm.ingress_port;
        hdr.h.d = sm.instance_type;
    }
}
control CC(inout hdrs_t hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in hdrs_t hdr) { apply { pkt.emit(hdr.h); pkt.emit(hdr.h2); } }

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
