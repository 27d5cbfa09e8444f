// const entries: exact entries, ternary entries with masks (&&&), don't-care (_) and default,
// range entries (..), explicit priorities (priority = N, and @priority(N)) and entries
// ordered by position (the first listed wins).
#include "lang_common.p4"

struct meta_t { }

#include "lang_blocks.p4"

control ConstEntries(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action set_b(bit<8> v) { hdr.h.b = v; }
    action set_c(bit<16> v) { hdr.h.c = v; }
    action set_e(bit<32> v) { hdr.h.e = v; }

    table exact_entries {
        key = { hdr.h.a : exact; }
        actions = { set_b; NoAction; }
        const entries = {
            8w1 : set_b(0x11);
            8w2 : set_b(0x22);
        }
        default_action = NoAction();
    }

    // listed first wins: a = 0x31 matches both entries
    table ordered {
        key = { hdr.h.a : ternary; hdr.h.d : range; }
        actions = { set_c; NoAction; }
        const entries = {
            (8w0x30 &&& 8w0xF0, 32w0 .. 32w10) : set_c(0x0A0A);
            // `_` on the range key spelled as the full range: p4c 1.2.5.16 writes it as 0 .. 0
            (_, 32w0 .. 32w0xFFFFFFFF) : set_c(0xFFFF);
        }
        default_action = NoAction();
    }

    // explicit priorities: the larger P4 priority value wins
    table prioritized {
        key = { hdr.h.a : ternary; }
        actions = { set_e; NoAction; }
        entries = {
            priority = 10 : 8w0x40 &&& 8w0xF0 : set_e(10);
            priority = 20 : 8w0x41 &&& 8w0xFF : set_e(20);
            priority = 5 : default : set_e(5);
        }
        default_action = NoAction();
    }

    // the older @priority annotation form (p4c: the value goes to BMv2 as is, smaller wins)
    table annotated {
        key = { hdr.h.b : ternary; }
        actions = { set_b; NoAction; }
        const entries = {
            8w0x00 &&& 8w0xF0 : set_b(0xA1) @priority(1);
            8w0x11 &&& 8w0xFF : set_b(0xA2) @priority(2);
        }
        default_action = NoAction();
    }

    apply {
        sm.egress_spec = 1;
        exact_entries.apply();
        ordered.apply();
        prioritized.apply();
        annotated.apply();
    }
}

V1Switch(LangParser(), LangVerify(), ConstEntries(), LangEgress(), LangCompute(), LangDeparser()) main;
