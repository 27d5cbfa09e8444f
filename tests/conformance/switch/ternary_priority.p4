// Ternary entries: among matching entries the highest STF priority wins (BMv2 gets 10000 - it).
#include <core.p4>
#include <v1model.p4>
#include "common_h.p4"

struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t m) { apply { } }
control I(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    action setb(bit<8> v, bit<9> port) { hdr.h.b = v; sm.egress_spec = port; }
    action drop() { mark_to_drop(sm); }
    table t {
        key = { hdr.h.a : ternary; hdr.h.c : range; }
        actions = { setb; drop; }
        default_action = drop();
    }
    apply { t.apply(); }
}
control E(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
