/* gradlane egress: record queue depth for ingress, PCN burst counting and ECN marking with
 * threshold switching, telemetry stamping of gradient DATA packets, per-queue counters. */
#ifndef GRADLANE_EGRESS_P4
#define GRADLANE_EGRESS_P4
#include "headers.p4"
#include "registers.p4"

control GradEgress(inout headers_t hdr,
                   inout metadata_t meta,
                   inout standard_metadata_t standard_metadata) {

    /* PCN per egress port: pending bursts and the threshold to use while any is pending. */
    register<bit<32>>(NUM_PORTS) pcn_count;
    register<bit<32>>(NUM_PORTS) pcn_threshold;
    /* Per hashed (port, job, worker): 1 + the last round whose burst arrival was counted. */
    register<bit<32>>(NUM_PCN_SENDERS) pcn_arrived_round;

    counter(NUM_QUEUES, CounterType.packets_and_bytes) queue_tx_ctr;
    counter(NUM_QUEUES, CounterType.packets_and_bytes) queue_marked_ctr;
    counter(NUM_SLOTS, CounterType.packets_and_bytes) slot_marked_ctr;
    counter(NUM_PORTS, CounterType.packets) pcn_start_ctr;
    counter(NUM_PORTS, CounterType.packets) pcn_arrival_ctr;

    bit<32> normal_threshold = 0xFFFFFFFF;
    bit<32> table_pcn_threshold = 0xFFFFFFFF;
    bit<32> ecn_threshold = 0xFFFFFFFF;
    bit<32> qidx = 0;
    bit<1>  pcn_started = 0;
    bit<1>  pcn_arrived = 0;

    action set_ecn_thresholds(bit<32> normal, bit<32> pcn) {
        normal_threshold = normal;
        table_pcn_threshold = pcn;
    }

    table ecn_config {
        key = {
            standard_metadata.egress_port: exact;
        }
        actions = { set_ecn_thresholds; NoAction; }
        default_action = NoAction();
        size = 512;
    }

    /* One atomic update of one port's PCN state; picks the ECN threshold for this packet. */
    action pcn_update(bit<32> sender) {
        bit<32> count;
        bit<32> thr;
        bit<32> last;
        bit<32> port = (bit<32>)standard_metadata.egress_port;
        pcn_count.read(count, port);
        pcn_threshold.read(thr, port);
        pcn_arrived_round.read(last, sender);
        bool start = hdr.gradient.isValid() && hdr.ipv4.diffserv[5:5] == 1;
        bit<32> carried = ((bit<32>)hdr.ipv4.diffserv[3:0]) * 5;
        thr = start ? (carried != 0 ? carried : table_pcn_threshold) : thr;
        count = start ? count + 1 : count;
        bool arrival = meta.is_grad_data == 1 && count != 0
                       && (hdr.gradient.flags & GRAD_FLAG_PULL) == 0
                       && last != hdr.gradient.round + 1;
        count = arrival ? count - 1 : count;
        last = arrival ? hdr.gradient.round + 1 : last;
        pcn_count.write(port, count);
        pcn_threshold.write(port, thr);
        pcn_arrived_round.write(sender, last);
        pcn_started = start ? 1w1 : 1w0;
        pcn_arrived = arrival ? 1w1 : 1w0;
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
            bit<32> sender = 0;
            if (hdr.gradient.isValid()) {
                hash(sender, HashAlgorithm.crc32, 32w0,
                     { standard_metadata.egress_port, hdr.gradient.job_id,
                       hdr.gradient.worker_rank },
                     NUM_PCN_SENDERS);
            }
            pcn_update(sender);
            if (pcn_started == 1) {
                pcn_start_ctr.count((bit<32>)standard_metadata.egress_port);
            }
            if (pcn_arrived == 1) {
                pcn_arrival_ctr.count((bit<32>)standard_metadata.egress_port);
            }
            if (hdr.ipv4.ecn != 0 && (bit<32>)standard_metadata.enq_qdepth > ecn_threshold) {
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
