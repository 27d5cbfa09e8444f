// A header whose width is not a whole number of bytes (8 + 16 + 1 = 25 bits): like p4c,
// the compiler pads it to 32 bits for BMv2, so extract consumes 4 bytes and emit writes them.
#include <core.p4>
#include <v1model.p4>

header odd_t {
    bit<8>  a;
    bit<16> c;
    bit<1>  flag;
}

struct headers_t {
    odd_t o;
}

struct meta_t { }

parser OddParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                 inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.o);
        transition accept;
    }
}

control OddIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (hdr.o.flag == 1) {
            hdr.o.c = hdr.o.c + 1;
        }
        hdr.o.a = hdr.o.a + 1;
        sm.egress_spec = 1;
    }
}

control OddEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { }
}

control OddChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control OddDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.o); }
}

V1Switch(OddParser(), OddChecksum(), OddIngress(), OddEgress(), OddChecksum(), OddDeparser()) main;
