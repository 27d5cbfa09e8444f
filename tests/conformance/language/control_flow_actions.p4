// return and exit in constant and run-time branches of actions, called from the apply block and
// as a table's actions; the code after the `if` (in the action) and after the call (in the apply
// block) shows what ran. Constant conditions: `!false`, `!true`, `8w1 == 8w2`, a `const bool`.
// Selector: h.a; run-time condition: h.c == 1; egress marks e to show it still runs.
#include "lang_common.p4"

struct meta_t { }

#include "lang_blocks.p4"

const bool ON = true;

control MarkEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.h.e = hdr.h.e | 32w0xE0000000;
    }
}

control FlowActions(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    // return in a branch that always runs: the rest of the action is skipped
    action ret_live() {
        hdr.h.b = 8w0x11;
        if (!false) {
            return;
        }
        hdr.h.b = 8w0xBB;
    }
    // return in a branch that never runs: the rest of the action runs
    action ret_dead() {
        hdr.h.b = 8w0x12;
        if (!true) {
            return;
        }
        hdr.h.e = 32w0x12;
    }
    // return in the live else of a constant-false condition
    action ret_else() {
        if (8w1 == 8w2) {
            hdr.h.b = 8w0xBB;
        } else {
            hdr.h.b = 8w0x13;
            return;
        }
        hdr.h.b = 8w0xBC;
    }
    // a named constant, and a dead else
    action ret_named() {
        if (ON) {
            hdr.h.b = 8w0x14;
        } else {
            return;
        }
        hdr.h.e = 32w0x14;
    }
    // return under a run-time condition
    action ret_runtime() {
        hdr.h.b = 8w0x15;
        if (hdr.h.c == 16w1) {
            return;
        }
        hdr.h.e = 32w0x15;
    }
    // exit in a branch that always runs: the rest of the action and of ingress is skipped
    action exit_live() {
        hdr.h.b = 8w0x21;
        if (!false) {
            exit;
        }
        hdr.h.b = 8w0xBB;
    }
    // exit in a branch that never runs
    action exit_dead() {
        hdr.h.b = 8w0x22;
        if (!true) {
            exit;
        }
        hdr.h.e = 32w0x22;
    }
    // exit under a run-time condition, with code after the `if`
    action exit_runtime() {
        hdr.h.b = 8w0x23;
        if (hdr.h.c == 16w1) {
            exit;
        }
        hdr.h.e = 32w0x23;
    }
    table t {
        key = { hdr.h.a : exact; }
        actions = { ret_live; ret_dead; ret_else; ret_named; ret_runtime; exit_live; exit_dead; exit_runtime;
                    NoAction; }
        const entries = {
            8w0x81 : ret_live();
            8w0x82 : ret_dead();
            8w0x83 : ret_else();
            8w0x84 : ret_named();
            8w0x85 : ret_runtime();
            8w0x91 : exit_live();
            8w0x92 : exit_dead();
            8w0x93 : exit_runtime();
        }
        default_action = NoAction();
    }
    apply {
        sm.egress_spec = 1;
        if (hdr.h.a == 8w0x01) {
            ret_live();
        } else if (hdr.h.a == 8w0x02) {
            ret_dead();
        } else if (hdr.h.a == 8w0x03) {
            ret_else();
        } else if (hdr.h.a == 8w0x04) {
            ret_named();
        } else if (hdr.h.a == 8w0x05) {
            ret_runtime();
        } else if (hdr.h.a == 8w0x11) {
            exit_live();
        } else if (hdr.h.a == 8w0x12) {
            exit_dead();
        } else if (hdr.h.a == 8w0x13) {
            exit_runtime();
        } else {
            t.apply();
        }
        // after the call: skipped only when the action exited
        hdr.h.d = 32w0xD0;
    }
}

V1Switch(LangParser(), LangVerify(), FlowActions(), MarkEgress(), LangCompute(), LangDeparser()) main;
