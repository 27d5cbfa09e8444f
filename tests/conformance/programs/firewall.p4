// A stateful firewall in the style of the P4 tutorials (written for this suite): TCP flows may
// only be opened from inside; a two-hash Bloom filter in registers remembers outgoing SYNs; a
// table sets the direction into a control-local variable; switch on action_run; hit/miss.
#include <core.p4>
#include <v1model.p4>

#define BLOOM_ENTRIES 4096
#define BLOOM_BITS 12

header ethernet_t { bit<48> dstAddr; bit<48> srcAddr; bit<16> etherType; }
header ipv4_t {
    bit<4> version; bit<4> ihl; bit<8> diffserv; bit<16> totalLen; bit<16> identification;
    bit<3> flags; bit<13> fragOffset; bit<8> ttl; bit<8> protocol; bit<16> hdrChecksum;
    bit<32> srcAddr; bit<32> dstAddr;
}
header tcp_t {
    bit<16> srcPort; bit<16> dstPort; bit<32> seqNo; bit<32> ackNo;
    bit<4> dataOffset; bit<4> res; bit<1> cwr; bit<1> ece; bit<1> urg; bit<1> ack;
    bit<1> psh; bit<1> rst; bit<1> syn; bit<1> fin; bit<16> window; bit<16> checksum; bit<16> urgentPtr;
}
struct headers { ethernet_t ethernet; ipv4_t ipv4; tcp_t tcp; }
struct metadata { }

parser FwParser(packet_in packet, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) { 0x0800: parse_ipv4; default: accept; }
    }
    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        transition select(hdr.ipv4.protocol) { 6: parse_tcp; default: accept; }
    }
    state parse_tcp { packet.extract(hdr.tcp); transition accept; }
}

control FwVerify(inout headers hdr, inout metadata meta) { apply { } }

control FwIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    register<bit<1>>(BLOOM_ENTRIES) bloom_1;
    register<bit<1>>(BLOOM_ENTRIES) bloom_2;
    bit<32> pos_1;
    bit<32> pos_2;
    bit<1> seen_1;
    bit<1> seen_2;
    bit<1> direction;

    action drop() { mark_to_drop(sm); }
    action forward(bit<9> port) { sm.egress_spec = port; }
    table ipv4_exact {
        key = { hdr.ipv4.dstAddr: exact; }
        actions = { forward; drop; }
        default_action = drop();
    }
    action set_direction(bit<1> dir) { direction = dir; }
    table check_ports {
        key = { sm.ingress_port: exact; sm.egress_spec: exact; }
        actions = { set_direction; NoAction; }
        default_action = NoAction();
    }
    action positions(bit<32> a, bit<32> b, bit<16> sport, bit<16> dport) {
        hash(pos_1, HashAlgorithm.crc16, 32w0, { a, b, sport, dport, hdr.ipv4.protocol }, (bit<32>)BLOOM_ENTRIES);
        hash(pos_2, HashAlgorithm.crc32, 32w0, { a, b, sport, dport, hdr.ipv4.protocol }, (bit<32>)BLOOM_ENTRIES);
    }

    apply {
        if (!hdr.ipv4.isValid()) { drop(); exit; }
        ipv4_exact.apply();
        if (hdr.tcp.isValid()) {
            direction = 0;
            if (check_ports.apply().hit) {
                if (direction == 0) {
                    positions(hdr.ipv4.srcAddr, hdr.ipv4.dstAddr, hdr.tcp.srcPort, hdr.tcp.dstPort);
                } else {
                    positions(hdr.ipv4.dstAddr, hdr.ipv4.srcAddr, hdr.tcp.dstPort, hdr.tcp.srcPort);
                }
                if (direction == 0) {
                    if (hdr.tcp.syn == 1) {
                        bloom_1.write(pos_1, 1);
                        bloom_2.write(pos_2, 1);
                    }
                } else {
                    bloom_1.read(seen_1, pos_1);
                    bloom_2.read(seen_2, pos_2);
                    if (seen_1 != 1 || seen_2 != 1) {
                        drop();
                    }
                }
            }
        }
    }
}

control FwEgress(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control FwCompute(inout headers hdr, inout metadata meta) { apply { } }
control FwDeparser(packet_out packet, in headers hdr) {
    apply { packet.emit(hdr.ethernet); packet.emit(hdr.ipv4); packet.emit(hdr.tcp); }
}

V1Switch(FwParser(), FwVerify(), FwIngress(), FwEgress(), FwCompute(), FwDeparser()) main;
