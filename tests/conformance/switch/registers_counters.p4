// A register counts packets per h.a; a packets-and-bytes counter counts per ingress port.
#include <core.p4>
#include <v1model.p4>
#include "common_h.p4"

struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t m) { apply { } }
control I(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    register<bit<32>>(4) seen;
    counter(8, CounterType.packets_and_bytes) rx;
    apply {
        bit<32> n;
        seen.read(n, (bit<32>) hdr.h.a);
        n = n + 1;
        seen.write((bit<32>) hdr.h.a, n);
        hdr.h.d = n;
        rx.count((bit<32>) sm.ingress_port);
        sm.egress_spec = 2;
    }
}
control E(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
