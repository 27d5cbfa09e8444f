// return and exit in constant and run-time branches of functions, called from the apply block
// and from an action; the code after the `if` (in the function) and after the call shows what
// ran. Selector: h.a; run-time condition: h.c == 1; egress marks e to show it still runs.
#include "lang_common.p4"

struct meta_t { }

#include "lang_blocks.p4"

control MarkEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.h.e = hdr.h.e | 32w0xE0000000;
    }
}

// returns from a live branch; the dead branches' returns never happen
bit<8> pick_live(in bit<8> x) {
    if (!true) {
        return 8w0xBB;
    }
    if (!false) {
        return x + 8w1;
    }
    return 8w0xBC;
}

// a return in the live else of a constant-false condition
bit<8> pick_else(in bit<8> x) {
    if (8w3 < 8w2) {
        return 8w0xBB;
    } else {
        return x + 8w2;
    }
}

// a return under a run-time condition
bit<8> pick_runtime(in bit<8> x, in bit<16> c) {
    if (c == 16w1) {
        return x + 8w3;
    }
    return x + 8w4;
}

// a void function: return in a live branch skips its rest; the caller's copy-out still happens
void set_live(inout bit<32> v) {
    v = 32w0x41;
    if (!false) {
        return;
    }
    v = 32w0xBB;
}

// return in a dead branch: the rest runs
void set_dead(inout bit<32> v) {
    v = 32w0x42;
    if (!true) {
        return;
    }
    v = v + 32w0x100;
}

// return under a run-time condition
void set_runtime(inout bit<32> v, in bit<16> c) {
    v = 32w0x43;
    if (c == 16w1) {
        return;
    }
    v = v + 32w0x100;
}

control FlowFunctions(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    // the functions inside an action
    action in_action() {
        hdr.h.b = pick_live(8w0x50);
        set_live(hdr.h.d);
        set_dead(hdr.h.e);
        hdr.h.c = (bit<16>)pick_runtime(8w0x60, hdr.h.c);
    }
    table t {
        key = { hdr.h.a : exact; }
        actions = { in_action; NoAction; }
        const entries = {
            8w0x80 : in_action();
        }
        default_action = NoAction();
    }
    apply {
        sm.egress_spec = 1;
        if (hdr.h.a == 8w0x01) {
            hdr.h.b = pick_live(8w0x10);
            set_live(hdr.h.d);
        } else if (hdr.h.a == 8w0x02) {
            hdr.h.b = pick_else(8w0x20);
            set_dead(hdr.h.d);
        } else if (hdr.h.a == 8w0x03) {
            hdr.h.b = pick_runtime(8w0x30, hdr.h.c);
            set_runtime(hdr.h.d, hdr.h.c);
        } else if (hdr.h.a == 8w0x04) {
            in_action();
        } else {
            t.apply();
        }
        hdr.h.e = hdr.h.e | 32w0xD0;
    }
}

V1Switch(LangParser(), LangVerify(), FlowFunctions(), MarkEgress(), LangCompute(), LangDeparser()) main;
