// A lookahead whose value is unused still checks that the bits are there: fewer bytes
// left than the type needs is PacketTooShort (as p4c and BMv2 keep it).
#include "lang_common.p4"

struct eight_bytes_t {
    bit<32> hi;
    bit<32> lo;
}

struct meta_t { }

parser PeekParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        pkt.lookahead<eight_bytes_t>();
        transition accept;
    }
}

control PeekIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.h.b = sm.parser_error == error.PacketTooShort ? 8w0xee : 8w0x11;
        sm.egress_spec = 1;
    }
}

control PeekNothing(inout headers_t hdr, inout meta_t meta) { apply { } }
control PeekEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control PeekDeparser(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(PeekParser(), PeekNothing(), PeekIngress(), PeekEgress(), PeekNothing(), PeekDeparser()) main;
