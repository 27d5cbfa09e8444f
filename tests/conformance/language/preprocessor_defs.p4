// Definitions included by preprocessor.p4 (a quoted include relative to the includer).
#ifndef PREPROCESSOR_DEFS_P4
#define PREPROCESSOR_DEFS_P4
#define OUT_PORT 3
#define ADD_TWICE(x, y) ((x) + (y) + (y))
#endif
