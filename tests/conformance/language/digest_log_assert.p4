// digest<T>(receiver, data), log_msg (plain and formatted), assert and assume: none of them
// changes the packet; the program still forwards it.
#include "lang_common.p4"

struct learn_t {
    bit<8>  a;
    bit<16> c;
}

struct meta_t { }

#include "lang_blocks.p4"

control Observing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        learn_t data = { a = hdr.h.a, c = hdr.h.c };
        digest<learn_t>(32w1, data);
        log_msg("plain message");
        log_msg("a={} c={}", { hdr.h.a, hdr.h.c });
        assert(hdr.h.a != 8w0xFF);
        assume(hdr.h.b == 8w0);
        hdr.h.b = 8w0xD1;
        sm.egress_spec = 1;
    }
}

V1Switch(LangParser(), LangVerify(), Observing(), LangEgress(), LangCompute(), LangDeparser()) main;
