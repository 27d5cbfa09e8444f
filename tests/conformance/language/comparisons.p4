// Comparisons (< <= > >= == !=, unsigned and signed) and logical && || ! as bool values,
// each turned into one bit of h.b with a bool->bit<1> cast and ++ concatenation.
#include "lang_common.p4"

struct meta_t { }

#include "lang_blocks.p4"

control Compare(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        bit<8> x = hdr.h.a;
        bool lt = x < 8w10;
        bool le = x <= 8w10;
        bool gt = x > 8w10;
        bool ge = x >= 8w10;
        bool eq = x == 8w10;
        bool ne = x != 8w10;
        bool neg = (int<8>)x < 8s0;
        bool logic = (lt || eq) && !(x == 8w0);
        hdr.h.b = (bit<1>)lt ++ (bit<1>)le ++ (bit<1>)gt ++ (bit<1>)ge ++
                  (bit<1>)eq ++ (bit<1>)ne ++ (bit<1>)neg ++ (bit<1>)logic;
        sm.egress_spec = 1;
    }
}

V1Switch(LangParser(), LangVerify(), Compare(), LangEgress(), LangCompute(), LangDeparser()) main;
