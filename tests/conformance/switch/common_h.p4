// Shared by the switch conformance programs: one 8-byte header h and a parser for it.
header h_t {
    bit<8>  a;
    bit<8>  b;
    bit<16> c;
    bit<32> d;
}

struct headers_t {
    h_t h;
}
