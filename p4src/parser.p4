/* gradlane parser: ethernet -> (arp | ipv4 [+ options by ihl] -> (tcp | udp -> gradient on
 * GRADLANE_UDP_PORT)). */
#ifndef GRADLANE_PARSER_P4
#define GRADLANE_PARSER_P4
#include "headers.p4"

parser GradParser(packet_in packet,
                  out headers_t hdr,
                  inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            ETHERTYPE_IPV4: parse_ipv4;
            ETHERTYPE_ARP: parse_arp;
            default: accept;
        }
    }
    state parse_arp {
        packet.extract(hdr.arp);
        transition accept;
    }
    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        transition select(hdr.ipv4.ihl) {
            5: parse_ipv4_payload;
            0 .. 4: accept;             /* shorter than a header: ingress drops it (bad ihl) */
            default: parse_ipv4_options;
        }
    }
    state parse_ipv4_options {
        packet.extract(hdr.ipv4_options, (bit<32>)(((bit<16>)hdr.ipv4.ihl - 16w5) * 16w32));
        transition parse_ipv4_payload;
    }
    state parse_ipv4_payload {
        transition select(hdr.ipv4.protocol) {
            IPPROTO_TCP: parse_tcp;
            IPPROTO_UDP: parse_udp;
            default: accept;
        }
    }
    state parse_tcp {
        packet.extract(hdr.tcp);
        meta.l4_src = hdr.tcp.srcPort;
        meta.l4_dst = hdr.tcp.dstPort;
        transition accept;
    }
    state parse_udp {
        packet.extract(hdr.udp);
        meta.l4_src = hdr.udp.srcPort;
        meta.l4_dst = hdr.udp.dstPort;
        transition select(hdr.udp.dstPort) {
            GRADLANE_UDP_PORT: parse_gradient;
            default: accept;
        }
    }
    state parse_gradient {
        packet.extract(hdr.gradient);
        transition accept;
    }
}

#endif
