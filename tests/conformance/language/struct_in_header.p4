// Struct-typed header fields: stored flat (p4c's names `_kind0`, `_p_hi1`...), read and written
// member by member or as a whole struct, and used as a select key.
#include "lang_common.p4"

struct pair_t {
    bit<4> hi;
    bit<4> lo;
}

header sh_t {
    bit<8> kind;
    pair_t p;
    pair_t q;
}

struct s_headers_t {
    h_t  h;
    sh_t s;
}

struct meta_t {
    bit<1> marked;
}

parser SParser(packet_in pkt, out s_headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        pkt.extract(hdr.s);
        transition select(hdr.s.p.hi) {
            4w0xF: mark;
            default: accept;
        }
    }
    state mark {
        meta.marked = 1;
        transition accept;
    }
}

control NoVerify(inout s_headers_t hdr, inout meta_t meta) { apply { } }
control NoEgress(inout s_headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control NoCompute(inout s_headers_t hdr, inout meta_t meta) { apply { } }
control Emit(packet_out pkt, in s_headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
        pkt.emit(hdr.s);
    }
}

control Shuffle(inout s_headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        hdr.s.q = hdr.s.p;
        hdr.s.p.lo = hdr.s.kind[3:0];
        hdr.h.a = hdr.s.q.hi ++ hdr.s.q.lo;
        if (meta.marked == 1) {
            hdr.h.b = 8w0xFF;
        }
    }
}

V1Switch(SParser(), NoVerify(), Shuffle(), NoEgress(), NoCompute(), Emit()) main;
