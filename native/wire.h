// The gradient header's constants the native code shares (hosts/wire.py is the reference:
// HEADER "!BBHHHIBBHIIHHI", 32 bytes; hosts/transport/packet_mac.py the trailer's length).
#pragma once

#include <cstddef>

namespace gradlane {

constexpr size_t HEADER_LEN = 32;
constexpr int VERSION = 1;
constexpr int KIND_DATA = 0;
constexpr int KIND_ACK = 1;
constexpr int KIND_STOP = 4;
constexpr int FLAG_PULL = 0x01;
constexpr int FLAG_RETX = 0x04;
constexpr int FLAG_ACK_NOW = 0x40;
constexpr int ECN_CE = 3;
constexpr size_t MAC_TAG_BYTES = 16;   // the --packet-mac trailer

}  // namespace gradlane
