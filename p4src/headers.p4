/* gradlane: header and metadata definitions shared by every control block.
 * The gradient header follows docs/contracts.md exactly (32 bytes, big-endian). */
#ifndef GRADLANE_HEADERS_P4
#define GRADLANE_HEADERS_P4

const bit<16> ETHERTYPE_IPV4 = 0x0800;
const bit<16> ETHERTYPE_ARP  = 0x0806;
const bit<8>  IPPROTO_TCP    = 6;
const bit<8>  IPPROTO_UDP    = 17;
const bit<16> GRADLANE_UDP_PORT = 19527;

const bit<4>  GRAD_KIND_DATA = 0;
const bit<8>  GRAD_FLAG_PULL     = 0x01;
const bit<8>  GRAD_FLAG_CRITICAL = 0x10;  /* must be delivered: never selectively dropped */
const bit<8>  GRAD_FLAG_PLAIN    = 0x20;  /* no network assistance: forwarded as ordinary traffic */

const bit<16> ARP_OPER_REQUEST = 1;
const bit<16> ARP_OPER_REPLY   = 2;

/* Sizes of the indexed state. */
const bit<32> NUM_SLOTS       = 1024;  /* loss-budget slots, one per (job, layer) */
const bit<32> NUM_PORTS       = 512;
const bit<32> NUM_QUEUES      = 4096;  /* NUM_PORTS * 8 priorities: index = port * 8 + prio */
const bit<32> NUM_PCN_SENDERS = 4096;  /* hashed (port, job, worker) burst trackers */
const bit<32> NUM_JOBS        = 65536; /* per-job counters are indexed by job_id */
/* Loss budgets are counted per (slot, stage, lane): stage 0 push, 1 pull; lane = the push
 * sender's worker_rank mod BUDGET_LANES, or a hash of a pull packet's destination address. */
const bit<32> BUDGET_LANES    = 16;
const bit<32> NUM_STAGE_SLOTS = 2048;   /* NUM_SLOTS * 2 stages: index = slot * 2 + stage */
const bit<32> NUM_BUDGETS     = 32768;  /* NUM_STAGE_SLOTS * BUDGET_LANES */
/* A pending PCN count expires this long after the port's last counted PCN-START (us), unless
 * GradEgress.pcn_config gives the port another value. */
const bit<48> PCN_EXPIRY_US   = 2000000;

typedef bit<48> mac_addr_t;
typedef bit<32> ipv4_addr_t;
typedef bit<9>  port_t;

header ethernet_t {
    mac_addr_t dstAddr;
    mac_addr_t srcAddr;
    bit<16>    etherType;
}

header arp_t {
    bit<16>     htype;
    bit<16>     ptype;
    bit<8>      hlen;
    bit<8>      plen;
    bit<16>     oper;
    mac_addr_t  sha;
    ipv4_addr_t spa;
    mac_addr_t  tha;
    ipv4_addr_t tpa;
}

header ipv4_t {
    bit<4>      version;
    bit<4>      ihl;
    bit<6>      diffserv;   /* TOS bits 7..2: DSCP, or PCN START/ACK/threshold on gradient packets */
    bit<2>      ecn;        /* TOS bits 1..0 */
    bit<16>     totalLen;
    bit<16>     identification;
    bit<3>      flags;
    bit<13>     fragOffset;
    bit<8>      ttl;
    bit<8>      protocol;
    bit<16>     hdrChecksum;
    ipv4_addr_t srcAddr;
    ipv4_addr_t dstAddr;
}

/* IPv4 options (ihl > 5): up to 40 bytes, kept as they are and covered by the checksum */
header ipv4_options_t {
    varbit<320> options;
}

header tcp_t {
    bit<16> srcPort;
    bit<16> dstPort;
    bit<32> seqNo;
    bit<32> ackNo;
    bit<4>  dataOffset;
    bit<4>  res;
    bit<8>  flags;
    bit<16> window;
    bit<16> checksum;
    bit<16> urgentPtr;
}

header udp_t {
    bit<16> srcPort;
    bit<16> dstPort;
    bit<16> length;
    bit<16> checksum;
}

header gradient_t {
    bit<4>  version;
    bit<4>  kind;
    bit<8>  flags;
    bit<16> job_id;
    bit<16> worker_rank;
    bit<16> layer_id;
    bit<32> round;
    bit<8>  mag_class;
    bit<8>  policy_epoch;   /* the sender's job policy generation (0: none) */
    bit<16> payload_len;
    bit<32> chunk_seq;
    bit<32> elem_offset;
    bit<16> tele_max_qdepth;
    bit<16> tele_hops;
    bit<32> tele_qdelay_us;
}

struct headers_t {
    ethernet_t ethernet;
    arp_t      arp;
    ipv4_t     ipv4;
    ipv4_options_t ipv4_options;
    tcp_t      tcp;
    udp_t      udp;
    gradient_t gradient;
}

struct metadata_t {
    bit<16> l4_src;           /* TCP/UDP ports for the flow hash (0 otherwise) */
    bit<16> l4_dst;
    bit<16> lb_key;           /* selector key: random per packet (gradient DATA) or 5-tuple hash */
    bit<3>  prio;             /* chosen priority queue, carried to egress */
    bit<1>  is_grad_data;     /* gradient header valid, kind == DATA, not PLAIN */
    bit<1>  is_plain;         /* gradient header with flag PLAIN: treated as ordinary traffic */
    bit<1>  no_spray;         /* job_features: per-flow hash instead of per-packet spraying */
    bit<1>  no_priority;      /* job_features: DATA queued as ordinary traffic (dscp_class) */
    bit<1>  no_selective_drop;/* job_features: the loss budget counts but never drops */
    bit<1>  drop_eligible;
    bit<1>  has_slot;         /* a gradient class matched: slot/bounds below are set */
    bit<32> slot;             /* loss-budget slot */
    bit<32> push_bound_bp;    /* loss bound for push-stage packets, basis points (1/10000) */
    bit<32> pull_bound_bp;    /* loss bound for pull-stage packets, basis points */
    bit<32> drop_threshold;   /* queue depth (packets) above which eligible packets may be dropped */
    bit<32> queue_index;      /* egress port * 8 + priority */
    bit<32> stage_slot;       /* slot * 2 + stage (0 push, 1 pull) */
    bit<1>  ecn_marked;       /* set by egress when it CE-marks */
}

#endif
