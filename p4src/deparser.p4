/* gradlane deparser: emits whichever headers are valid, outermost first. */
#ifndef GRADLANE_DEPARSER_P4
#define GRADLANE_DEPARSER_P4
#include "headers.p4"

control GradDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.arp);
        packet.emit(hdr.ipv4);
        packet.emit(hdr.ipv4_options);
        packet.emit(hdr.tcp);
        packet.emit(hdr.udp);
        packet.emit(hdr.gradient);
    }
}

#endif
