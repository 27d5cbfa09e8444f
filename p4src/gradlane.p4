/* gradlane: loss-tolerant, priority-aware gradient transport for BMv2 v1model.
 * Start BMv2 with `-- --priority-queues 8`. Tables, counters and registers: p4src/README.md. */
#include <core.p4>
#include <v1model.p4>

#include "headers.p4"
#include "registers.p4"
#include "parser.p4"
#include "checksum.p4"
#include "ingress.p4"
#include "egress.p4"
#include "deparser.p4"

V1Switch(GradParser(),
         GradVerifyChecksum(),
         GradIngress(),
         GradEgress(),
         GradComputeChecksum(),
         GradDeparser()) main;
