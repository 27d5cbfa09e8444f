// Compound assignments (P4_16 1.2.4): `+= -= *= /= %= &= |= ^= <<= >>= |+|= |-|=` as
// statements, on slices and in an action (in a for loop's update: for_unrolled.p4, as p4c
// 1.2.5.16 compiles a C-style loop's body to run once).
#include "lang_common.p4"

struct meta_t { }

#include "lang_blocks.p4"

control Compound(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action bump(bit<8> by) {
        hdr.h.b += by;
        hdr.h.b |+|= 0xf0;
    }
    table t {
        key = { }
        actions = { bump; }
        const default_action = bump(3);
    }
    apply {
        sm.egress_spec = 1;
        bit<32> x = hdr.h.d;
        x += 10;
        x -= 4;
        x *= 3;
        x /= 2;
        x %= 1024;
        x <<= 4;
        x >>= 2;
        x &= 0xfff;
        x |= 0x10000;
        x ^= 0x1;
        hdr.h.d = x;
        hdr.h.c[15:8] |-|= 0x20;
        t.apply();
    }
}

V1Switch(LangParser(), LangVerify(), Compound(), LangEgress(), LangCompute(), LangDeparser()) main;
