// Reading a header stack's `next` in a parser when every element is already extracted is
// error.StackOutOfBounds: the parser stops (reject) with that parser_error, ingress still runs.
// The read is checked as a statement's value (also under an `if`) and as a select key.
#include "lang_common.p4"

header tag_t {
    bit<8> value;
    bit<8> last;
}

struct tag_headers_t {
    h_t h;
    tag_t[2] tags;
}

struct meta_t {
    bit<8> peek;
}

parser TagParser(packet_in pkt, out tag_headers_t hdr, inout meta_t meta,
                 inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition parse_tag;
    }
    state parse_tag {
        pkt.extract(hdr.tags.next);
        transition select(hdr.tags.last.last) {
            8w1: peek;
            default: parse_tag;
        }
    }
    state peek {
        transition select(hdr.h.a) {
            8w1: peek_select;
            8w2: peek_if;
            default: peek_assign;
        }
    }
    state peek_assign {
        meta.peek = hdr.tags.next.value;
        transition accept;
    }
    state peek_if {
        if (hdr.h.c == 16w1) {
            meta.peek = hdr.tags.next.value;
        }
        transition accept;
    }
    state peek_select {
        transition select(hdr.tags.next.last) {
            8w0: accept;
            default: reject;
        }
    }
}

control NoVerify(inout tag_headers_t hdr, inout meta_t meta) { apply { } }
control NoEgress(inout tag_headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control NoCompute(inout tag_headers_t hdr, inout meta_t meta) { apply { } }
control EmitTags(packet_out pkt, in tag_headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
        pkt.emit(hdr.tags);
    }
}

control ReportError(inout tag_headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (sm.parser_error == error.NoError) {
            hdr.h.b = 8w0x00;
        } else if (sm.parser_error == error.StackOutOfBounds) {
            hdr.h.b = 8w0x5B;
        } else {
            hdr.h.b = 8w0x99;
        }
        hdr.h.c = (bit<16>)meta.peek;
        sm.egress_spec = 1;
    }
}

V1Switch(TagParser(), NoVerify(), ReportError(), NoEgress(), NoCompute(), EmitTags()) main;
