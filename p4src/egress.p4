/* gradlane egress: record queue depth for ingress, PCN burst counting and ECN marking with
 * threshold switching (the threshold compared with the packet's queue, or with the port's
 * occupancy over its priority queues), telemetry stamping of gradient DATA packets, per-queue
 * counters. */
#ifndef GRADLANE_EGRESS_P4
#define GRADLANE_EGRESS_P4
#include "headers.p4"
#include "registers.p4"

control GradEgress(inout headers_t hdr,
                   inout metadata_t meta,
                   inout standard_metadata_t standard_metadata) {

    /* PCN per egress port: pending bursts and the threshold to use while any is pending; the
     * time the count expires (egress timestamp, us) and how often it expired so far. */
    register<bit<32>>(NUM_PORTS) pcn_count;
    register<bit<32>>(NUM_PORTS) pcn_threshold;
    register<bit<48>>(NUM_PORTS) pcn_deadline;
    register<bit<32>>(NUM_PORTS) pcn_epoch;
    /* Per hashed (port, job, worker): 1 + the round whose START was counted, the port's epoch
     * then, and 1 + the last round whose burst arrival was counted. */
    register<bit<32>>(NUM_PCN_SENDERS) pcn_started_round;
    register<bit<32>>(NUM_PCN_SENDERS) pcn_started_epoch;
    register<bit<32>>(NUM_PCN_SENDERS) pcn_arrived_round;

    counter(NUM_QUEUES, CounterType.packets_and_bytes) queue_tx_ctr;
    counter(NUM_QUEUES, CounterType.packets_and_bytes) queue_marked_ctr;
    counter(NUM_SLOTS, CounterType.packets_and_bytes) slot_marked_ctr;
    counter(NUM_PORTS, CounterType.packets) pcn_start_ctr;
    counter(NUM_PORTS, CounterType.packets) pcn_arrival_ctr;
    counter(NUM_PORTS, CounterType.packets) pcn_expired_ctr;
    /* The same PCN events per job (index job_id), so jobs sharing a port are told apart. */
    counter(NUM_JOBS, CounterType.packets) pcn_job_start_ctr;
    counter(NUM_JOBS, CounterType.packets) pcn_job_arrival_ctr;

    bit<32> normal_threshold = 0xFFFFFFFF;
    bit<32> table_pcn_threshold = 0xFFFFFFFF;
    bit<32> ecn_threshold = 0xFFFFFFFF;
    bit<32> qidx = 0;
    bit<1>  pcn_started = 0;
    bit<1>  pcn_arrived = 0;
    bit<1>  pcn_expired = 0;
    bit<48> pcn_expiry_us = PCN_EXPIRY_US;
    bit<32> job_pcn_threshold = 0;   /* 0 = the job has no threshold of its own */
    bit<1>  ddl_flow_hit = 0;        /* a DDL flow without the gradient header (ddl_flow) */
    bit<16> ddl_job = 0;
    bit<16> ddl_rank = 0;
    bit<1>  mark_on_port = 0;        /* ecn_depth: compare the threshold with the port's occupancy */
    bit<32> marking_depth = 0;

    action set_ecn_thresholds(bit<32> normal, bit<32> pcn) {
        normal_threshold = normal;
        table_pcn_threshold = pcn;
    }

    /* A port with an entry here compares its ECN threshold with its occupancy over all its
     * priority queues (each other queue's depth at its last dequeue, qdepth_reg, plus this
     * packet's enq_qdepth), so that packets of a higher class carry the mark while a lower
     * class fills; without one, with this packet's own queue (enq_qdepth). */
    action compare_port_occupancy() {
        mark_on_port = 1;
    }

    table ecn_depth {
        key = {
            standard_metadata.egress_port: exact;
        }
        actions = { compare_port_occupancy; NoAction; }
        default_action = NoAction();
        size = 512;
    }

    table ecn_config {
        key = {
            standard_metadata.egress_port: exact;
        }
        actions = { set_ecn_thresholds; NoAction; }
        default_action = NoAction();
        size = 512;
    }

    /* A job's own PCN threshold (packets), set and adapted by the controller; it wins over the
     * threshold the START carries in its TOS bits. */
    action set_pcn_job_threshold(bit<32> threshold) {
        job_pcn_threshold = threshold;
    }

    table pcn_job {
        key = {
            hdr.gradient.job_id: exact;
        }
        actions = { set_pcn_job_threshold; NoAction; }
        default_action = NoAction();
        size = 1024;
    }

    /* DDL traffic that does not carry the gradient header (a worker's push over kernel TCP):
     * the controller names its flows and the (job, worker) whose PCN-START announces them, so
     * the flow's first packet after a counted START is that burst's arrival. */
    action set_ddl_sender(bit<16> job_id, bit<16> worker_rank) {
        ddl_flow_hit = 1;
        ddl_job = job_id;
        ddl_rank = worker_rank;
    }

    table ddl_flow {
        key = {
            hdr.ipv4.srcAddr: ternary;
            hdr.ipv4.dstAddr: ternary;
            hdr.ipv4.protocol: ternary;
            meta.l4_dst: range;
        }
        actions = { set_ddl_sender; NoAction; }
        default_action = NoAction();
        size = 256;
    }

    action set_pcn_expiry(bit<48> expiry_us) {
        pcn_expiry_us = expiry_us;
    }

    table pcn_config {
        key = {
            standard_metadata.egress_port: exact;
        }
        actions = { set_pcn_expiry; NoAction; }
        default_action = NoAction();
        size = 512;
    }

    /* One atomic update of one port's PCN state; picks the ECN threshold for this packet.
     * A START counts once per (port, job, worker, round) however often it is resent; a newer
     * round's START replaces the sender's earlier one whose burst never came; the count expires
     * pcn_expiry_us after the port's last counted START (the epoch then turns, so senders
     * counted before never decrement the fresh count). The START's threshold is the job's
     * own (pcn_job), else the one it carries, else the port's; while bursts are pending the
     * lowest of theirs holds. A burst arrives with the sender's first push DATA of the counted
     * round, or, for a ddl_flow packet (no round of its own), with its first packet while the
     * sender's START is pending. */
    action pcn_update(bit<32> sender) {
        bit<32> count;
        bit<32> thr;
        bit<48> deadline;
        bit<32> epoch;
        bit<32> started;
        bit<32> started_epoch;
        bit<32> last;
        bit<32> port = (bit<32>)standard_metadata.egress_port;
        bit<48> now = standard_metadata.egress_global_timestamp;
        pcn_count.read(count, port);
        pcn_threshold.read(thr, port);
        pcn_deadline.read(deadline, port);
        pcn_epoch.read(epoch, port);
        pcn_started_round.read(started, sender);
        pcn_started_epoch.read(started_epoch, sender);
        pcn_arrived_round.read(last, sender);
        bool expired = count != 0 && now > deadline;
        count = expired ? 32w0 : count;
        epoch = expired ? epoch + 1 : epoch;
        bit<32> round1 = hdr.gradient.round + 1;
        bool start = hdr.gradient.isValid() && hdr.ipv4.diffserv[5:5] == 1;
        bool counted = started == round1 && started_epoch == epoch;
        bool pending = started != 0 && started_epoch == epoch && last != started;
        bool fresh = start && started != round1;
        bit<32> carried = ((bit<32>)hdr.ipv4.diffserv[3:0]) * 5;
        bit<32> offered = job_pcn_threshold != 0 ? job_pcn_threshold
                          : (carried != 0 ? carried : table_pcn_threshold);
        /* bursts of several jobs pending on one port: the lowest threshold holds */
        thr = start ? ((count != 0 && thr < offered) ? thr : offered) : thr;
        count = (fresh && !pending) ? count + 1 : count;
        deadline = fresh ? now + pcn_expiry_us : deadline;
        started = fresh ? round1 : started;
        started_epoch = fresh ? epoch : started_epoch;
        counted = fresh || counted;
        bool grad_arrival = hdr.gradient.isValid() && hdr.gradient.kind == GRAD_KIND_DATA
                            && (hdr.gradient.flags & GRAD_FLAG_PULL) == 0
                            && count != 0 && counted && last != round1;
        bool flow_arrival = ddl_flow_hit == 1 && count != 0 && pending;
        bool arrival = grad_arrival || flow_arrival;
        count = arrival ? count - 1 : count;
        last = grad_arrival ? round1 : (flow_arrival ? started : last);
        pcn_count.write(port, count);
        pcn_threshold.write(port, thr);
        pcn_deadline.write(port, deadline);
        pcn_epoch.write(port, epoch);
        pcn_started_round.write(sender, started);
        pcn_started_epoch.write(sender, started_epoch);
        pcn_arrived_round.write(sender, last);
        pcn_started = fresh ? 1w1 : 1w0;
        pcn_arrived = arrival ? 1w1 : 1w0;
        pcn_expired = expired ? 1w1 : 1w0;
        ecn_threshold = (count != 0) ? thr : normal_threshold;
    }

    action mark_ce() {
        hdr.ipv4.ecn = 3;
        meta.ecn_marked = 1;
    }

    action stamp_telemetry() {
        bit<16> depth = (bit<16>)standard_metadata.enq_qdepth;
        hdr.gradient.tele_max_qdepth = (depth > hdr.gradient.tele_max_qdepth)
                                       ? depth : hdr.gradient.tele_max_qdepth;
        hdr.gradient.tele_hops = hdr.gradient.tele_hops + 1;
        hdr.gradient.tele_qdelay_us = hdr.gradient.tele_qdelay_us
                                      + standard_metadata.deq_timedelta;
        hdr.udp.checksum = 0;
    }

    apply {
        qidx = ((bit<32>)standard_metadata.egress_port) * 8 + (bit<32>)meta.prio;
        qdepth_reg.write(qidx, (bit<32>)standard_metadata.deq_qdepth);
        queue_tx_ctr.count(qidx);
        if (hdr.ipv4.isValid()) {
            ecn_config.apply();
            pcn_config.apply();
            bit<32> sender = 0;
            if (hdr.gradient.isValid()) {
                pcn_job.apply();
                ddl_job = hdr.gradient.job_id;
                ddl_rank = hdr.gradient.worker_rank;
            } else {
                ddl_flow.apply();
            }
            if (hdr.gradient.isValid() || ddl_flow_hit == 1) {
                hash(sender, HashAlgorithm.crc32, 32w0,
                     { standard_metadata.egress_port, ddl_job, ddl_rank },
                     NUM_PCN_SENDERS);
            }
            pcn_update(sender);
            if (pcn_started == 1) {
                pcn_start_ctr.count((bit<32>)standard_metadata.egress_port);
                pcn_job_start_ctr.count((bit<32>)ddl_job);
            }
            if (pcn_arrived == 1) {
                pcn_arrival_ctr.count((bit<32>)standard_metadata.egress_port);
                pcn_job_arrival_ctr.count((bit<32>)ddl_job);
            }
            if (pcn_expired == 1) {
                pcn_expired_ctr.count((bit<32>)standard_metadata.egress_port);
            }
            marking_depth = (bit<32>)standard_metadata.enq_qdepth;
            ecn_depth.apply();
            if (mark_on_port == 1) {
                bit<32> base = ((bit<32>)standard_metadata.egress_port) * 8;
                bit<32> d0 = 0;
                bit<32> d1 = 0;
                bit<32> d2 = 0;
                bit<32> d3 = 0;
                bit<32> d4 = 0;
                bit<32> d5 = 0;
                bit<32> d6 = 0;
                bit<32> d7 = 0;
                qdepth_reg.read(d0, base);
                qdepth_reg.read(d1, base + 1);
                qdepth_reg.read(d2, base + 2);
                qdepth_reg.read(d3, base + 3);
                qdepth_reg.read(d4, base + 4);
                qdepth_reg.read(d5, base + 5);
                qdepth_reg.read(d6, base + 6);
                qdepth_reg.read(d7, base + 7);
                /* this packet's own queue: its enqueue depth, not the register just written */
                marking_depth = marking_depth + d0 + d1 + d2 + d3 + d4 + d5 + d6 + d7
                                - (bit<32>)standard_metadata.deq_qdepth;
            }
            if (hdr.ipv4.ecn != 0 && marking_depth > ecn_threshold) {
                mark_ce();
                queue_marked_ctr.count(qidx);
                if (meta.has_slot == 1) {
                    slot_marked_ctr.count(meta.slot);
                }
            }
            if (meta.is_grad_data == 1) {
                stamp_telemetry();
            }
        }
    }
}

#endif
