// hash(result, algo, base, data, max) with crc16, crc32, csum16 and identity over a list
// {a, b, c}; result = base + (H % max), or the whole hash when max is 2^width.
#include "lang_common.p4"

struct meta_t { }

#include "lang_blocks.p4"

control Hashing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        bit<16> crc16_value;
        bit<32> crc32_value;
        bit<16> csum_value;
        bit<32> bounded;
        hash(crc16_value, HashAlgorithm.crc16, 16w0, { hdr.h.a, hdr.h.b, hdr.h.c }, 32w65536);
        hash(crc32_value, HashAlgorithm.crc32, 32w0, { hdr.h.a, hdr.h.b, hdr.h.c }, 64w4294967296);
        hash(csum_value, HashAlgorithm.csum16, 16w0, { hdr.h.a, hdr.h.b, hdr.h.c }, 32w65536);
        hash(bounded, HashAlgorithm.crc32, 32w5, { hdr.h.a, hdr.h.b, hdr.h.c }, 32w1000);
        hdr.h.c = crc16_value;
        hdr.h.d = crc32_value;
        hdr.h.e = csum_value ++ (bit<16>)bounded;
        bit<8> ident;
        hash(ident, HashAlgorithm.identity, 8w0, { hdr.h.b }, 16w256);
        hdr.h.a = ident;
        sm.egress_spec = 1;
    }
}

V1Switch(LangParser(), LangVerify(), Hashing(), LangEgress(), LangCompute(), LangDeparser()) main;
