// P4 function calls in a parser's select key, in a table key (they run before the transition /
// the lookup) and in the initializers of parser and control locals.
#include "lang_common.p4"

struct meta_t {
    bit<8> spare;
}

#include "lang_blocks.p4"

bit<1> low_bit(in bit<8> v) {
    return v[0:0];
}

bit<8> plus_one(in bit<8> v) {
    return v + 1;
}

parser CallParser(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    bit<8> ten = plus_one(8w9);
    state start {
        pkt.extract(hdr.h);
        transition select(low_bit(hdr.h.a)) {
            1w1: odd;
            default: accept;
        }
    }
    state odd {
        hdr.h.b = 8w0x0D;
        hdr.h.e[7:0] = ten;
        transition accept;
    }
}

control Keys(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    bit<8> first = plus_one(hdr.h.a);
    action set_c(bit<16> v) {
        hdr.h.c = v;
    }
    table t {
        key = {
            plus_one(hdr.h.a): exact @name("plus_one_a");
        }
        actions = {
            set_c;
            NoAction;
        }
        const entries = {
            8w4 : set_c(16w0x44);
        }
        default_action = NoAction();
    }
    apply {
        sm.egress_spec = 1;
        t.apply();
        hdr.h.d[7:0] = first;
    }
}

V1Switch(CallParser(), LangVerify(), Keys(), LangEgress(), LangCompute(), LangDeparser()) main;
