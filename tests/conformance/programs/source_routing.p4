// Source routing in the style of the P4 tutorials (written for this suite): a stack of
// (bottom-of-stack, port) entries after Ethernet; each switch pops one and forwards on it; at
// the last one the EtherType becomes IPv4 again.
#include <core.p4>
#include <v1model.p4>

#define MAX_HOPS 9
const bit<16> TYPE_SRCROUTING = 0x1234;

header ethernet_t { bit<48> dstAddr; bit<48> srcAddr; bit<16> etherType; }
header srcRoute_t { bit<1> bos; bit<15> port; }
header ipv4_t { bit<8> ttl; bit<8> protocol; bit<16> pad; bit<32> srcAddr; bit<32> dstAddr; }
struct headers { ethernet_t ethernet; srcRoute_t[MAX_HOPS] srcRoutes; ipv4_t ipv4; }
struct metadata { }

parser SrParser(packet_in packet, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            TYPE_SRCROUTING: parse_srcRouting;
            0x0800: parse_ipv4;
            default: accept;
        }
    }
    state parse_srcRouting {
        packet.extract(hdr.srcRoutes.next);
        transition select(hdr.srcRoutes.last.bos) { 1: parse_ipv4; default: parse_srcRouting; }
    }
    state parse_ipv4 { packet.extract(hdr.ipv4); transition accept; }
}

control SrVerify(inout headers hdr, inout metadata meta) { apply { } }

control SrIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    action drop() { mark_to_drop(sm); }
    action srcRoute_nhop() {
        sm.egress_spec = (bit<9>)hdr.srcRoutes[0].port;
        hdr.srcRoutes.pop_front(1);
    }
    action srcRoute_finish() { hdr.ethernet.etherType = 0x0800; }
    action update_ttl() { hdr.ipv4.ttl = hdr.ipv4.ttl - 1; }
    apply {
        if (hdr.srcRoutes[0].isValid()) {
            if (hdr.srcRoutes[0].bos == 1) {
                srcRoute_finish();
            }
            srcRoute_nhop();
            if (hdr.ipv4.isValid()) {
                update_ttl();
            }
        } else {
            drop();
        }
    }
}

control SrEgress(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control SrCompute(inout headers hdr, inout metadata meta) { apply { } }
control SrDeparser(packet_out packet, in headers hdr) {
    apply { packet.emit(hdr.ethernet); packet.emit(hdr.srcRoutes); packet.emit(hdr.ipv4); }
}

V1Switch(SrParser(), SrVerify(), SrIngress(), SrEgress(), SrCompute(), SrDeparser()) main;
