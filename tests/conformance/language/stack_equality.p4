// `==` / `!=` on whole header stacks: element by element, each pair equal when both are
// invalid or both valid with equal fields (also through a local stack and inside structs).
#include <core.p4>
#include <v1model.p4>

header e_t {
    bit<8> v;
}

header out_t {
    bit<8> flags;
}

struct pair_t {
    e_t[2] s;
}

struct headers_t {
    e_t[2] a;
    e_t[2] b;
    out_t o;
}

struct meta_t { }

parser StackParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                   inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.a.next);
        pkt.extract(hdr.a.next);
        pkt.extract(hdr.b.next);
        transition select(hdr.b[0].v) {
            0xff: accept;           // b keeps only one valid element
            default: second;
        }
    }
    state second {
        pkt.extract(hdr.b.next);
        transition accept;
    }
}

control StackIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.o.setValid();
        hdr.o.flags = 0;
        if (hdr.a == hdr.b) {
            hdr.o.flags = hdr.o.flags | 1;
        }
        if (hdr.a != hdr.b) {
            hdr.o.flags = hdr.o.flags | 2;
        }
        e_t[2] copy;
        copy[0] = hdr.a[0];
        copy[1] = hdr.a[1];
        pair_t p1 = { copy };
        pair_t p2 = { hdr.a };
        if (p1 == p2) {
            hdr.o.flags = hdr.o.flags | 4;
        }
        sm.egress_spec = 1;
    }
}

control StackNothing(inout headers_t hdr, inout meta_t meta) { apply { } }
control StackEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control StackDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.o);
        pkt.emit(hdr.a);
        pkt.emit(hdr.b);
    }
}

V1Switch(StackParser(), StackNothing(), StackIngress(), StackEgress(), StackNothing(), StackDeparser()) main;
