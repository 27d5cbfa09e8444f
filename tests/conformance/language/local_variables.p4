// Local variables: control-level variables shared by actions, action locals, locals with and
// without initializers in apply and nested blocks, and struct/tuple-typed locals.
#include "lang_common.p4"

struct pair_t {
    bit<8> first;
    bit<8> second;
}

struct meta_t { }

#include "lang_blocks.p4"

control Locals(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    bit<32> total = 32w0;
    action accumulate(bit<32> amount) {
        bit<32> doubled = amount + amount;
        total = total + doubled;
    }
    apply {
        accumulate((bit<32>)hdr.h.a);
        accumulate(32w1);
        pair_t p = { first = hdr.h.b, second = 8w0x20 };
        bit<16> sum;
        sum = (bit<16>)p.first + (bit<16>)p.second;
        {
            bit<16> inner = sum << 1;
            hdr.h.c = inner;
        }
        hdr.h.e = total;
        sm.egress_spec = 1;
    }
}

V1Switch(LangParser(), LangVerify(), Locals(), LangEgress(), LangCompute(), LangDeparser()) main;
