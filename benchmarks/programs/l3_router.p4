/* The benchmarks' L3 router: Ethernet + IPv4, longest-prefix match on the destination to a
 * next hop (MAC rewrite, egress port, TTL decrement), IPv4 checksum recomputed on egress. */
#include <core.p4>
#include <v1model.p4>

header eth_h {
    bit<48> dst;
    bit<48> src;
    bit<16> ether_type;
}

header ip4_h {
    bit<4>  version;
    bit<4>  ihl;
    bit<8>  diffserv;
    bit<16> total_len;
    bit<16> identification;
    bit<3>  flags;
    bit<13> frag_offset;
    bit<8>  ttl;
    bit<8>  protocol;
    bit<16> hdr_checksum;
    bit<32> src_addr;
    bit<32> dst_addr;
}

struct hdrs_t {
    eth_h eth;
    ip4_h ip4;
}

struct meta_t { }

parser RouterParser(packet_in pkt, out hdrs_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(h.eth);
        transition select(h.eth.ether_type) {
            0x0800: ip;
            default: accept;
        }
    }
    state ip {
        pkt.extract(h.ip4);
        transition accept;
    }
}

control RouterVerify(inout hdrs_t h, inout meta_t m) {
    apply { }
}

control MyIngress(inout hdrs_t h, inout meta_t m, inout standard_metadata_t sm) {
    action drop() {
        mark_to_drop(sm);
    }

    action ipv4_forward(bit<48> next_mac, bit<9> port) {
        h.eth.src = h.eth.dst;
        h.eth.dst = next_mac;
        sm.egress_spec = port;
        h.ip4.ttl = h.ip4.ttl - 1;
    }

    table ipv4_lpm {
        key = { h.ip4.dst_addr: lpm; }
        actions = { ipv4_forward; drop; NoAction; }
        default_action = drop();
        size = 16384;
    }

    apply {
        if (h.ip4.isValid()) {
            ipv4_lpm.apply();
        }
    }
}

control MyEgress(inout hdrs_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply { }
}

control RouterUpdate(inout hdrs_t h, inout meta_t m) {
    apply {
        update_checksum(h.ip4.isValid(),
            { h.ip4.version, h.ip4.ihl, h.ip4.diffserv, h.ip4.total_len, h.ip4.identification,
              h.ip4.flags, h.ip4.frag_offset, h.ip4.ttl, h.ip4.protocol, h.ip4.src_addr, h.ip4.dst_addr },
            h.ip4.hdr_checksum, HashAlgorithm.csum16);
    }
}

control RouterDeparser(packet_out pkt, in hdrs_t h) {
    apply {
        pkt.emit(h.eth);
        pkt.emit(h.ip4);
    }
}

V1Switch(RouterParser(), RouterVerify(), MyIngress(), MyEgress(), RouterUpdate(), RouterDeparser()) main;
