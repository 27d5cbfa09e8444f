/* gradlane ingress: ARP replies, IPv4 LPM to (possibly equal-cost) next hops, gradient or
 * DSCP/ECN classification into priority queues, bounded selective drop per (job, layer range)
 * slot, counted separately for push and pull and per sender lane; per-job ablation switches. */
#ifndef GRADLANE_INGRESS_P4
#define GRADLANE_INGRESS_P4
#include "headers.p4"
#include "registers.p4"

control GradIngress(inout headers_t hdr,
                    inout metadata_t meta,
                    inout standard_metadata_t standard_metadata) {

    /* Loss budget per (slot, stage, lane), index (slot * 2 + stage) * BUDGET_LANES + lane:
     * the round it counts, and packets seen/dropped in that round. */
    register<bit<32>>(NUM_BUDGETS) budget_round;
    register<bit<32>>(NUM_BUDGETS) budget_seen;
    register<bit<32>>(NUM_BUDGETS) budget_dropped;

    counter(NUM_SLOTS, CounterType.packets_and_bytes) slot_seen_ctr;
    counter(NUM_SLOTS, CounterType.packets_and_bytes) slot_dropped_ctr;
    counter(NUM_STAGE_SLOTS, CounterType.packets_and_bytes) stage_seen_ctr;
    counter(NUM_STAGE_SLOTS, CounterType.packets_and_bytes) stage_dropped_ctr;
    counter(NUM_QUEUES, CounterType.packets_and_bytes) queue_dropped_ctr;
    /* gradient DATA of the slot that found its egress queue deeper than the class's
     * drop_threshold (the controller's PCN control law reads it per job) */
    counter(NUM_SLOTS, CounterType.packets_and_bytes) slot_congested_ctr;

    action_selector(HashAlgorithm.crc16, 32w1024, 32w16) ecmp_selector;

    bit<1> sel_drop = 0;
    bit<1> congested_now = 0;

    action drop() {
        mark_to_drop(standard_metadata);
    }

    /* ARP request for an address the controller configured: answer it from the switch. */
    action arp_reply(mac_addr_t mac) {
        hdr.arp.oper = ARP_OPER_REPLY;
        hdr.arp.tha = hdr.arp.sha;
        hdr.arp.sha = mac;
        ipv4_addr_t asker = hdr.arp.spa;
        hdr.arp.spa = hdr.arp.tpa;
        hdr.arp.tpa = asker;
        hdr.ethernet.dstAddr = hdr.ethernet.srcAddr;
        hdr.ethernet.srcAddr = mac;
        standard_metadata.egress_spec = standard_metadata.ingress_port;
    }

    table arp_responder {
        key = {
            hdr.arp.oper: exact;
            hdr.arp.tpa: exact;
        }
        actions = { arp_reply; drop; }
        default_action = drop();
        size = 1024;
    }

    action set_nhop(mac_addr_t src_mac, mac_addr_t dst_mac, port_t port) {
        hdr.ethernet.srcAddr = src_mac;
        hdr.ethernet.dstAddr = dst_mac;
        standard_metadata.egress_spec = port;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }

    table ipv4_lpm {
        key = {
            hdr.ipv4.dstAddr: lpm;
            meta.lb_key: selector;
        }
        actions = { set_nhop; drop; }
        implementation = ecmp_selector;
        default_action = drop();
        size = 1024;
    }

    /* Ablation switches of one job (all on when the job has no entry). */
    action set_job_features(bit<1> spray, bit<1> priority, bit<1> selective_drop) {
        meta.no_spray = ~spray;
        meta.no_priority = ~priority;
        meta.no_selective_drop = ~selective_drop;
    }

    table job_features {
        key = {
            hdr.gradient.job_id: exact;
        }
        actions = { set_job_features; NoAction; }
        default_action = NoAction();
        size = 1024;
    }

    action set_class(bit<3> prio, bit<1> drop_eligible, bit<32> slot,
                     bit<32> push_bound_bp, bit<32> pull_bound_bp, bit<32> drop_threshold) {
        standard_metadata.priority = prio;
        meta.prio = prio;
        meta.drop_eligible = drop_eligible;
        meta.has_slot = 1;
        meta.slot = slot;
        meta.push_bound_bp = push_bound_bp;
        meta.pull_bound_bp = pull_bound_bp;
        meta.drop_threshold = drop_threshold;
    }

    action set_default_class() {
        standard_metadata.priority = 0;
        meta.prio = 0;
        meta.has_slot = 0;
    }

    table gradient_class {
        key = {
            hdr.gradient.job_id: ternary;
            hdr.gradient.layer_id: range;
            hdr.gradient.mag_class: range;
            hdr.gradient.policy_epoch: ternary;   /* a job's previous entries while a change is pending */
        }
        actions = { set_class; set_default_class; }
        default_action = set_default_class();
        size = 1024;
    }

    action set_dscp_class(bit<3> prio, bit<32> drop_threshold) {
        standard_metadata.priority = prio;
        meta.prio = prio;
        meta.drop_threshold = drop_threshold;
    }

    table dscp_class {
        key = {
            hdr.ipv4.diffserv: ternary;
        }
        actions = { set_dscp_class; set_default_class; }
        default_action = set_default_class();
        size = 64;
    }

    /* One atomic read-modify-write of one budget: restart on a new round, count the packet,
     * and drop it only if congested, eligible (never CRITICAL, selective drop on for the job)
     * and dropped/seen stays within the stage's bound. */
    action gradient_budget(bit<32> budget) {
        bit<32> depth;
        bit<32> rnd;
        bit<32> seen;
        bit<32> dropped;
        qdepth_reg.read(depth, meta.queue_index);
        budget_round.read(rnd, budget);
        budget_seen.read(seen, budget);
        budget_dropped.read(dropped, budget);
        bool fresh = rnd != hdr.gradient.round;
        seen = (fresh ? 32w0 : seen) + 1;
        dropped = fresh ? 32w0 : dropped;
        bit<32> bound = ((hdr.gradient.flags & GRAD_FLAG_PULL) != 0) ? meta.pull_bound_bp
                                                                      : meta.push_bound_bp;
        bool within = ((bit<64>)dropped + 1) * 10000 <= (bit<64>)seen * (bit<64>)bound;
        bool congested = depth > meta.drop_threshold;
        bool eligible = meta.drop_eligible == 1 && meta.no_selective_drop == 0
                        && (hdr.gradient.flags & GRAD_FLAG_CRITICAL) == 0;
        sel_drop = (eligible && congested && within) ? 1w1 : 1w0;
        congested_now = congested ? 1w1 : 1w0;
        dropped = dropped + (bit<32>)sel_drop;
        budget_round.write(budget, hdr.gradient.round);
        budget_seen.write(budget, seen);
        budget_dropped.write(budget, dropped);
    }

    /* Commodity form (no gradient header): Not-ECT packets are dropped above the threshold. */
    action commodity_drop_check() {
        bit<32> depth;
        qdepth_reg.read(depth, meta.queue_index);
        sel_drop = (meta.drop_eligible == 1 && depth > meta.drop_threshold) ? 1w1 : 1w0;
    }

    apply {
        meta.drop_threshold = 0xFFFFFFFF;
        if (hdr.arp.isValid()) {
            arp_responder.apply();
        } else if (hdr.ipv4.isValid()) {
            if (standard_metadata.checksum_error == 1 || hdr.ipv4.ihl < 5) {
                drop();                 /* corrupted header: never forwarded with a new checksum */
            } else if (hdr.ipv4.ttl <= 1) {
                drop();
            } else {
                if (hdr.gradient.isValid()) {
                    if ((hdr.gradient.flags & GRAD_FLAG_PLAIN) != 0) {
                        meta.is_plain = 1;
                    } else {
                        job_features.apply();
                        if (hdr.gradient.kind == GRAD_KIND_DATA) {
                            meta.is_grad_data = 1;
                        }
                    }
                }
                if (meta.is_grad_data == 1 && meta.no_spray == 0) {
                    random(meta.lb_key, 16w0, 16w0xFFFF);
                } else {
                    hash(meta.lb_key, HashAlgorithm.crc16, 16w0,
                         { hdr.ipv4.srcAddr, hdr.ipv4.dstAddr, hdr.ipv4.protocol,
                           meta.l4_src, meta.l4_dst },
                         32w65536);
                }
                if (ipv4_lpm.apply().hit) {
                /* Packets no switch may drop selectively: gradient control kinds and CRITICAL. */
                bool protected = hdr.gradient.isValid()
                                 && (hdr.gradient.kind != GRAD_KIND_DATA
                                     || (hdr.gradient.flags & GRAD_FLAG_CRITICAL) != 0);
                bool by_dscp = false;
                if (hdr.gradient.isValid() && meta.is_plain == 0) {
                    if (meta.is_grad_data == 1) {
                        gradient_class.apply();
                        by_dscp = meta.no_priority == 1;
                    } else {
                        standard_metadata.priority = 7;
                        meta.prio = 7;
                    }
                } else {
                    by_dscp = true;
                    meta.drop_eligible = (hdr.ipv4.ecn == 0 && !protected) ? 1w1 : 1w0;
                }
                if (by_dscp) {
                    /* priority only: a gradient class keeps its slot, bounds and threshold */
                    bit<1> kept_slot = meta.has_slot;
                    bit<32> kept_threshold = meta.drop_threshold;
                    dscp_class.apply();
                    if (meta.is_grad_data == 1) {
                        meta.has_slot = kept_slot;
                        meta.drop_threshold = kept_threshold;
                    }
                }
                meta.queue_index = ((bit<32>)standard_metadata.egress_spec) * 8
                                   + (bit<32>)meta.prio;
                if (meta.is_grad_data == 1 && meta.has_slot == 1) {
                    bit<32> stage = ((hdr.gradient.flags & GRAD_FLAG_PULL) != 0) ? 32w1 : 32w0;
                    bit<32> lane = (bit<32>)hdr.gradient.worker_rank & (BUDGET_LANES - 1);
                    if (stage == 1) {
                        /* pull packets all come from the PS: the lane is their destination */
                        hash(lane, HashAlgorithm.crc16, 32w0, { hdr.ipv4.dstAddr }, BUDGET_LANES);
                    }
                    meta.stage_slot = meta.slot * 2 + stage;
                    gradient_budget(meta.stage_slot * BUDGET_LANES + lane);
                    slot_seen_ctr.count(meta.slot);
                    stage_seen_ctr.count(meta.stage_slot);
                    if (congested_now == 1) {
                        slot_congested_ctr.count(meta.slot);
                    }
                    if (sel_drop == 1) {
                        slot_dropped_ctr.count(meta.slot);
                        stage_dropped_ctr.count(meta.stage_slot);
                    }
                } else if (meta.is_grad_data == 0) {
                    commodity_drop_check();
                }
                if (sel_drop == 1) {
                    queue_dropped_ctr.count(meta.queue_index);
                    drop();
                }
                }
            }
        } else {
            drop();
        }
    }
}

#endif
