// isValid(), setValid() and setInvalid(): an optional header is added when absent and
// removed when present; validity also guards reads.
#include "lang_common.p4"

header opt_t {
    bit<16> marker;
}

struct opt_headers_t {
    h_t h;
    opt_t opt;
}

struct meta_t { }

parser OptParser(packet_in pkt, out opt_headers_t hdr, inout meta_t meta,
                 inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.a) {
            8w1: parse_opt;
            default: accept;
        }
    }
    state parse_opt { pkt.extract(hdr.opt); transition accept; }
}

control NoVerify(inout opt_headers_t hdr, inout meta_t meta) { apply { } }
control NoEgress(inout opt_headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control NoCompute(inout opt_headers_t hdr, inout meta_t meta) { apply { } }
control EmitOpt(packet_out pkt, in opt_headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
        pkt.emit(hdr.opt);
    }
}

control Toggle(inout opt_headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (hdr.opt.isValid()) {
            hdr.h.c = hdr.opt.marker;
            hdr.opt.setInvalid();
        } else {
            hdr.opt.setValid();
            hdr.opt.marker = 16w0xADD0;
        }
        hdr.h.b = hdr.opt.isValid() ? 8w1 : 8w0;
        sm.egress_spec = 1;
    }
}

V1Switch(OptParser(), NoVerify(), Toggle(), NoEgress(), NoCompute(), EmitOpt()) main;
