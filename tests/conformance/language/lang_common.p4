// Shared by the language conformance programs: the v1model includes and a 12-byte header h
// (a, b: 8 bits; c: 16 bits; d, e: 32 bits) that every program reads and writes.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  a;
    bit<8>  b;
    bit<16> c;
    bit<32> d;
    bit<32> e;
}

struct headers_t {
    h_t h;
}
