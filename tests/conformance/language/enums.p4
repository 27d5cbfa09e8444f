// Enums: a plain enum in local variables and comparisons, a serializable enum
// (enum bit<8> ...) cast from and to its underlying type and used as a table key.
#include "lang_common.p4"

enum Direction { UP, DOWN }
enum bit<8> Kind { DATA = 1, ACK = 2, PROBE = 0x10 }

struct meta_t {
    Kind kind;
}

#include "lang_blocks.p4"

control Enums(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action set_port(bit<9> port) {
        sm.egress_spec = port;
    }
    table by_kind {
        key = { meta.kind : exact; }
        actions = { set_port; NoAction; }
        const entries = {
            Kind.ACK : set_port(2);
            Kind.PROBE : set_port(3);
        }
        default_action = set_port(1);
    }
    apply {
        meta.kind = (Kind)hdr.h.a;
        Direction dir = Direction.UP;
        if (meta.kind == Kind.DATA) {
            dir = Direction.DOWN;
        }
        hdr.h.b = dir == Direction.DOWN ? 8w0xDD : 8w0x11;
        hdr.h.c = (bit<16>)(bit<8>)Kind.PROBE;
        by_kind.apply();
    }
}

V1Switch(LangParser(), LangVerify(), Enums(), LangEgress(), LangCompute(), LangDeparser()) main;
