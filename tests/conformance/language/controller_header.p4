// @controller_header("packet_in"/"packet_out"): packets from the CPU port carry a packet_out
// header naming the egress port; packets sent to the CPU get a packet_in header with the
// ingress port.
#include "lang_common.p4"

#define CPU_PORT 64

@controller_header("packet_out")
header packet_out_t {
    bit<9> egress_port;
    bit<7> pad;
}

@controller_header("packet_in")
header packet_in_t {
    bit<9> ingress_port;
    bit<7> pad;
}

struct cpu_headers_t {
    packet_out_t packet_out;
    packet_in_t packet_in;
    h_t h;
}

struct meta_t { }

parser CpuParser(packet_in pkt, out cpu_headers_t hdr, inout meta_t meta,
                 inout standard_metadata_t sm) {
    state start {
        transition select(sm.ingress_port) {
            CPU_PORT: parse_packet_out;
            default: parse_h;
        }
    }
    state parse_packet_out {
        pkt.extract(hdr.packet_out);
        transition parse_h;
    }
    state parse_h {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control NoVerify(inout cpu_headers_t hdr, inout meta_t meta) { apply { } }
control NoEgress(inout cpu_headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control NoCompute(inout cpu_headers_t hdr, inout meta_t meta) { apply { } }
control CpuDeparser(packet_out pkt, in cpu_headers_t hdr) {
    apply {
        pkt.emit(hdr.packet_in);
        pkt.emit(hdr.h);
    }
}

control CpuIngress(inout cpu_headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (hdr.packet_out.isValid()) {
            sm.egress_spec = hdr.packet_out.egress_port;
            hdr.packet_out.setInvalid();
        } else {
            hdr.packet_in.setValid();
            hdr.packet_in.ingress_port = sm.ingress_port;
            hdr.packet_in.pad = 0;
            sm.egress_spec = CPU_PORT;
        }
    }
}

V1Switch(CpuParser(), NoVerify(), CpuIngress(), NoEgress(), NoCompute(), CpuDeparser()) main;
