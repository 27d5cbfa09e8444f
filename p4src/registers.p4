/* gradlane state shared by ingress and egress (top-level externs). */
#ifndef GRADLANE_REGISTERS_P4
#define GRADLANE_REGISTERS_P4
#include "headers.p4"

/* Latest depth (packets) of each egress queue, written by egress, read by ingress.
 * Index: egress port * 8 + priority. */
register<bit<32>>(NUM_QUEUES) qdepth_reg;

#endif
