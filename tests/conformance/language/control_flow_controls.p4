// return and exit in constant and run-time branches of nested controls and of the apply block:
// a return leaves only its own control (the caller goes on), an exit ends ingress (egress still
// runs). Selector: h.a; run-time condition: h.c == 1; egress marks e to show it still runs.
#include "lang_common.p4"

struct meta_t { }

#include "lang_blocks.p4"

const bool ON_EXIT = true;

control MarkEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.h.e = hdr.h.e | 32w0xE0000000;
    }
}

control RetLive(inout headers_t hdr) {
    apply {
        hdr.h.b = 8w0x51;
        if (!false) {
            return;
        }
        hdr.h.b = 8w0xBB;
    }
}

control RetDead(inout headers_t hdr) {
    apply {
        hdr.h.b = 8w0x52;
        if (!true) {
            return;
        }
        hdr.h.e = 32w0x52;
    }
}

control RetRuntime(inout headers_t hdr) {
    apply {
        hdr.h.b = 8w0x53;
        if (hdr.h.c == 16w1) {
            return;
        }
        hdr.h.e = 32w0x53;
    }
}

control ExitLive(inout headers_t hdr) {
    apply {
        hdr.h.b = 8w0x54;
        if (8w1 != 8w2) {
            exit;
        }
        hdr.h.b = 8w0xBB;
    }
}

control ExitDead(inout headers_t hdr) {
    apply {
        hdr.h.b = 8w0x55;
        if (8w1 == 8w2) {
            exit;
        }
        hdr.h.e = 32w0x55;
    }
}

control ExitRuntime(inout headers_t hdr) {
    apply {
        hdr.h.b = 8w0x56;
        if (hdr.h.c == 16w1) {
            exit;
        }
        hdr.h.e = 32w0x56;
    }
}

// a control inside a control: the inner return leaves the inner control only
control Outer(inout headers_t hdr) {
    RetLive() inner;
    apply {
        inner.apply(hdr);
        hdr.h.c = hdr.h.c | 16w0x5700;
        if (!false) {
            return;
        }
        hdr.h.c = 16w0xBBBB;
    }
}

// a table's action inside a nested control, with a return in a live branch
control WithTable(inout headers_t hdr) {
    action ret_live() {
        hdr.h.b = 8w0x58;
        if (!false) {
            return;
        }
        hdr.h.b = 8w0xBB;
    }
    table t {
        key = { hdr.h.a : exact; }
        actions = { ret_live; NoAction; }
        const entries = {
            8w0x08 : ret_live();
        }
        default_action = NoAction();
    }
    apply {
        t.apply();
        if (!true) {
            return;
        }
        hdr.h.e = 32w0x58;
    }
}

control FlowControls(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    RetLive() ret_live;
    RetDead() ret_dead;
    RetRuntime() ret_runtime;
    ExitLive() exit_live;
    ExitDead() exit_dead;
    ExitRuntime() exit_runtime;
    Outer() outer;
    WithTable() with_table;
    apply {
        sm.egress_spec = 1;
        if (hdr.h.a == 8w0x01) {
            ret_live.apply(hdr);
        } else if (hdr.h.a == 8w0x02) {
            ret_dead.apply(hdr);
        } else if (hdr.h.a == 8w0x03) {
            ret_runtime.apply(hdr);
        } else if (hdr.h.a == 8w0x04) {
            exit_live.apply(hdr);
        } else if (hdr.h.a == 8w0x05) {
            exit_dead.apply(hdr);
        } else if (hdr.h.a == 8w0x06) {
            exit_runtime.apply(hdr);
        } else if (hdr.h.a == 8w0x07) {
            outer.apply(hdr);
        } else if (hdr.h.a == 8w0x08) {
            with_table.apply(hdr);
        } else if (hdr.h.a == 8w0x09) {
            // the apply block's own return, in a live branch inside a run-time one
            hdr.h.b = 8w0x59;
            if (!false) {
                return;
            }
            hdr.h.b = 8w0xBB;
        } else if (hdr.h.a == 8w0x0A) {
            // the apply block's own exit, in a live branch
            hdr.h.b = 8w0x5A;
            if (ON_EXIT) {
                exit;
            }
            hdr.h.b = 8w0xBB;
        }
        // after the call: skipped after an exit (and after the apply block's own return)
        hdr.h.d = 32w0xD0;
    }
}

V1Switch(LangParser(), LangVerify(), FlowControls(), MarkEgress(), LangCompute(), LangDeparser()) main;
