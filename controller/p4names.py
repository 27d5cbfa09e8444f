"""Every P4 name the controller uses (P4Info names of p4src/gradlane.p4), in one place.

The data plane's README lists these; when p4src renames something, this is the only module
that changes.
"""
from __future__ import annotations

# ARP answers
ARP_TABLE = "GradIngress.arp_responder"
ARP_KEY_OPER = "hdr.arp.oper"
ARP_KEY_TPA = "hdr.arp.tpa"
ARP_REPLY = "GradIngress.arp_reply"
ARP_REPLY_MAC = "mac"
ARP_OPER_REQUEST = 1

# Routes and equal-cost groups
ROUTE_TABLE = "GradIngress.ipv4_lpm"
ROUTE_KEY_DST = "hdr.ipv4.dstAddr"
ECMP_PROFILE = "GradIngress.ecmp_selector"
SET_NHOP = "GradIngress.set_nhop"
SET_NHOP_SRC_MAC = "src_mac"
SET_NHOP_DST_MAC = "dst_mac"
SET_NHOP_PORT = "port"
ECMP_MAX_GROUP_SIZE = 16

# Gradient classification and loss budgets
CLASS_TABLE = "GradIngress.gradient_class"
CLASS_KEY_JOB = "hdr.gradient.job_id"
CLASS_KEY_LAYER = "hdr.gradient.layer_id"
CLASS_KEY_MAG = "hdr.gradient.mag_class"
CLASS_KEY_EPOCH = "hdr.gradient.policy_epoch"
SET_CLASS = "GradIngress.set_class"
SET_CLASS_PRIO = "prio"
SET_CLASS_ELIGIBLE = "drop_eligible"
SET_CLASS_SLOT = "slot"
SET_CLASS_PUSH_BOUND = "push_bound_bp"
SET_CLASS_PULL_BOUND = "pull_bound_bp"
SET_CLASS_DROP_THRESHOLD = "drop_threshold"
SET_DEFAULT_CLASS = "GradIngress.set_default_class"
NUM_SLOTS = 1024
JOB_ID_BITS = 16
LAYER_ID_MAX = 0xFFFF
MAG_CLASS_MAX = 7

# Per-job ablation switches (no entry = every mechanism on)
JOB_FEATURES_TABLE = "GradIngress.job_features"
JOB_FEATURES_KEY_JOB = "hdr.gradient.job_id"
SET_JOB_FEATURES = "GradIngress.set_job_features"
SET_JOB_FEATURES_SPRAY = "spray"
SET_JOB_FEATURES_PRIORITY = "priority"
SET_JOB_FEATURES_DROP = "selective_drop"

# Traffic without the gradient header
DSCP_TABLE = "GradIngress.dscp_class"
DSCP_KEY = "hdr.ipv4.diffserv"   # the 6 DSCP bits (headers.p4 splits diffserv and ecn)
SET_DSCP_CLASS = "GradIngress.set_dscp_class"
SET_DSCP_PRIO = "prio"
SET_DSCP_DROP_THRESHOLD = "drop_threshold"
DSCP_PRECEDENCE_SHIFT = 3   # IP precedence = the top 3 of the 6 DSCP bits
DSCP_PRECEDENCE_MASK = 0x38

# ECN / PCN thresholds per egress port
ECN_TABLE = "GradEgress.ecn_config"
ECN_KEY_PORT = "standard_metadata.egress_port"
SET_ECN = "GradEgress.set_ecn_thresholds"
SET_ECN_NORMAL = "normal"
SET_ECN_PCN = "pcn"
# Ports whose ECN threshold is compared with the port's occupancy, not the packet's queue
ECN_DEPTH_TABLE = "GradEgress.ecn_depth"
COMPARE_PORT_OCCUPANCY = "GradEgress.compare_port_occupancy"

# A job's own PCN threshold (no entry = the START's TOS bits, else the port's pcn value)
PCN_JOB_TABLE = "GradEgress.pcn_job"
PCN_JOB_KEY_JOB = "hdr.gradient.job_id"
SET_PCN_JOB = "GradEgress.set_pcn_job_threshold"
SET_PCN_JOB_THRESHOLD = "threshold"

# DDL flows without the gradient header (kernel TCP pushes), each tied to the (job, worker)
# whose PCN-START announces its bursts
DDL_FLOW_TABLE = "GradEgress.ddl_flow"
DDL_FLOW_KEY_SRC = "hdr.ipv4.srcAddr"
DDL_FLOW_KEY_DST = "hdr.ipv4.dstAddr"
DDL_FLOW_KEY_PROTOCOL = "hdr.ipv4.protocol"
DDL_FLOW_KEY_DST_PORT = "meta.l4_dst"
SET_DDL_SENDER = "GradEgress.set_ddl_sender"
SET_DDL_SENDER_JOB = "job_id"
SET_DDL_SENDER_RANK = "worker_rank"
DDL_FLOW_TABLE_SIZE = 256
WORKER_RANK_MAX = 0xFFFE   # 0xFFFF is the PS's rank (hosts/wire.py PS_RANK)

# Counters (indirect)
SLOT_SEEN_CTR = "GradIngress.slot_seen_ctr"
SLOT_DROPPED_CTR = "GradIngress.slot_dropped_ctr"
SLOT_MARKED_CTR = "GradEgress.slot_marked_ctr"
STAGE_SEEN_CTR = "GradIngress.stage_seen_ctr"        # index slot * 2 + stage (0 push, 1 pull)
STAGE_DROPPED_CTR = "GradIngress.stage_dropped_ctr"
QUEUE_DROPPED_CTR = "GradIngress.queue_dropped_ctr"
QUEUE_TX_CTR = "GradEgress.queue_tx_ctr"
QUEUE_MARKED_CTR = "GradEgress.queue_marked_ctr"
PCN_START_CTR = "GradEgress.pcn_start_ctr"
PCN_ARRIVAL_CTR = "GradEgress.pcn_arrival_ctr"
PCN_EXPIRED_CTR = "GradEgress.pcn_expired_ctr"
PCN_JOB_START_CTR = "GradEgress.pcn_job_start_ctr"       # index job_id
PCN_JOB_ARRIVAL_CTR = "GradEgress.pcn_job_arrival_ctr"
SLOT_CONGESTED_CTR = "GradIngress.slot_congested_ctr"
PRIORITIES = 8


def stage_index(slot: int, pull: bool) -> int:
    """Index of a slot's push or pull stage in the per-stage counters."""
    return slot * 2 + int(pull)


def queue_index(port: int, prio: int) -> int:
    """Index of a (port, priority) queue in the per-queue counters."""
    return port * PRIORITIES + prio
