// Sub-parsers: an instance applied from a state (in, inout and out arguments, a local
// variable, its own select, `reject`), the statements after the call running once it
// accepts (state locals stay in scope), and a direct type invocation `TagParser.apply(...)`.
#include "lang_common.p4"

header tag_t {
    bit<8> kind;
    bit<8> val;
}

struct sp_headers_t {
    h_t      h;
    tag_t[2] tags;
}

struct meta_t {
    bit<8> count;
    bit<8> sum;
}

// One tag onto the stack: count grows by 1 + bonus, seen is the tag's value; kind 0xFF rejects.
parser TagParser(packet_in pkt, inout tag_t[2] tags, in bit<8> bonus, inout bit<8> count,
                 out bit<8> seen) {
    bit<8> kind;
    state start {
        kind = pkt.lookahead<bit<8>>();
        transition select(kind) {
            8w0xFF: reject;
            default: take;
        }
    }
    state take {
        pkt.extract(tags.next);
        count = count + 1 + bonus;
        seen = tags.last.val;
        transition accept;
    }
}

parser SpParser(packet_in pkt, out sp_headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    TagParser() first;
    bit<8> seen1;
    bit<8> seen2;
    state start {
        pkt.extract(hdr.h);
        meta.count = 0;
        first.apply(pkt, hdr.tags, 8w0, meta.count, seen1);
        meta.sum = seen1;
        transition select(hdr.h.a) {
            8w2: second;
            default: accept;
        }
    }
    state second {
        bit<8> bonus = hdr.h.b;
        TagParser.apply(pkt, hdr.tags, bonus, meta.count, seen2);
        meta.sum = meta.sum + seen2;
        hdr.h.b = bonus + 1;
        transition accept;
    }
}

control NoVerify(inout sp_headers_t hdr, inout meta_t meta) { apply { } }
control NoEgress(inout sp_headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control NoCompute(inout sp_headers_t hdr, inout meta_t meta) { apply { } }
control Emit(packet_out pkt, in sp_headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
        pkt.emit(hdr.tags);
    }
}

control Report(inout sp_headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        hdr.h.c = meta.count ++ meta.sum;
    }
}

V1Switch(SpParser(), NoVerify(), Report(), NoEgress(), NoCompute(), Emit()) main;
