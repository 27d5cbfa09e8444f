// hash() with crc16, crc32, csum16 and xor16 over {h.a, h.b} / {h.a, h.b, h.c}.
#include <core.p4>
#include <v1model.p4>
#include "common_h.p4"

struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t m) { apply { } }
control I(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        bit<16> r16;
        bit<32> r32;
        if (hdr.h.c == 1) {
            hash(r16, HashAlgorithm.crc16, (bit<16>) 0, { hdr.h.a, hdr.h.b }, (bit<32>) 65536);
            hdr.h.c = r16;
            hash(r32, HashAlgorithm.crc32, (bit<32>) 0, { hdr.h.a, hdr.h.b }, (bit<64>) 4294967296);
            hdr.h.d = r32;
        } else {
            hash(r16, HashAlgorithm.csum16, (bit<16>) 0, { hdr.h.a, hdr.h.b, hdr.h.c }, (bit<32>) 65536);
            hdr.h.c = r16;
            hash(r32, HashAlgorithm.xor16, (bit<32>) 0, { hdr.h.a, hdr.h.b, hdr.h.c }, (bit<32>) 65536);
            hdr.h.d = r32;
        }
        sm.egress_spec = 1;
    }
}
control E(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
