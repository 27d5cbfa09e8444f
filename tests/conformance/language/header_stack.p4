// Header stacks: extract into .next in a parser loop, select on .last, record .lastIndex,
// index with [i], pop_front, push_front and setValid on a pushed slot; emit the stack.
#include "lang_common.p4"

header label_t {
    bit<8> value;
    bit<8> bottom;
}

struct stack_headers_t {
    h_t h;
    label_t[4] labels;
}

struct meta_t {
    bit<32> last_index;
}

parser StackParser(packet_in pkt, out stack_headers_t hdr, inout meta_t meta,
                   inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition parse_label;
    }
    state parse_label {
        pkt.extract(hdr.labels.next);
        meta.last_index = hdr.labels.lastIndex;
        transition select(hdr.labels.last.bottom) {
            8w1: accept;
            default: parse_label;
        }
    }
}

control NoVerify(inout stack_headers_t hdr, inout meta_t meta) { apply { } }
control NoEgress(inout stack_headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control NoCompute(inout stack_headers_t hdr, inout meta_t meta) { apply { } }
control EmitStack(packet_out pkt, in stack_headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
        pkt.emit(hdr.labels);
    }
}

control Stack(inout stack_headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.h.a = (bit<8>)meta.last_index;
        hdr.h.b = hdr.labels[1].isValid() ? hdr.labels[1].value : 8w0xFF;
        hdr.labels.pop_front(1);
        hdr.labels.push_front(1);
        hdr.labels[0].setValid();
        hdr.labels[0].value = 8w0x10;
        hdr.labels[0].bottom = 8w0;
        sm.egress_spec = 1;
    }
}

V1Switch(StackParser(), NoVerify(), Stack(), NoEgress(), NoCompute(), EmitStack()) main;
