// const declarations (top level and local, with constant expressions), typedef and type
// (a new type needing explicit casts).
#include "lang_common.p4"

typedef bit<8> byte_t;
typedef byte_t small_t;
type bit<32> tag_t;

const bit<16> MAGIC = 16w0x1234;
const byte_t SHIFT = 4;
const bit<32> MASK = (32w1 << SHIFT) - 1;
const tag_t BASE_TAG = (tag_t)32w0x100;

struct meta_t {
    small_t copy;
    tag_t tag;
}

#include "lang_blocks.p4"

control Consts(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        const bit<8> LOCAL = 8w0x22;
        meta.copy = hdr.h.a;
        meta.tag = (tag_t)hdr.h.d;
        hdr.h.b = meta.copy + LOCAL;
        hdr.h.c = MAGIC;
        hdr.h.d = (bit<32>)meta.tag & MASK;
        hdr.h.e = (bit<32>)BASE_TAG + (bit<32>)SHIFT;
        sm.egress_spec = 1;
    }
}

V1Switch(LangParser(), LangVerify(), Consts(), LangEgress(), LangCompute(), LangDeparser()) main;
