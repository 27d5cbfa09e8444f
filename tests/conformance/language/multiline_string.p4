// String literals may span lines (p4c accepts them; the PINS programs write their
// @entry_restriction constraints that way). What looks like a comment or a directive inside the
// string is part of it, and the lines after the string keep their numbers. (p4c writes such a
// string unescaped into its JSON when it reaches it, e.g. in log_msg: JSON no parser accepts.)
#include "lang_common.p4"

struct meta_t { }

#include "lang_blocks.p4"

control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action set_b(bit<8> v) { hdr.h.b = v; }
    @entry_restriction("
    // only small values of a
    a < 16;
    /* not a comment either */
  ")
    table t {
        key = { hdr.h.a : exact @name("a"); }
        actions = { set_b; NoAction; }
        default_action = NoAction();
    }
    apply {
        t.apply();
        hdr.h.e = 32w0x600d;
        sm.egress_spec = 1;
    }
}

V1Switch(LangParser(), LangVerify(), Ing(), LangEgress(), LangCompute(), LangDeparser()) main;
