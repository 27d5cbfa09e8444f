"""A P4Info with the objects p4src/README.md names, for unit tests that must not need the compiler.

Ids follow p4c's prefixes (tables 0x02, actions 0x01, action profiles 0x11, counters 0x12).
The integration tests use the compiler's real P4Info instead.
"""
from __future__ import annotations

from p4.config.v1 import p4info_pb2

EXACT = p4info_pb2.MatchField.EXACT
LPM = p4info_pb2.MatchField.LPM
TERNARY = p4info_pb2.MatchField.TERNARY
RANGE = p4info_pb2.MatchField.RANGE

ACTIONS = {
    "GradIngress.drop": [],
    "GradIngress.arp_reply": [("mac", 48)],
    "GradIngress.set_nhop": [("src_mac", 48), ("dst_mac", 48), ("port", 9)],
    "GradIngress.set_class": [("prio", 3), ("drop_eligible", 1), ("slot", 32),
                              ("push_bound_bp", 32), ("pull_bound_bp", 32), ("drop_threshold", 32)],
    "GradIngress.set_default_class": [],
    "GradIngress.set_job_features": [("spray", 1), ("priority", 1), ("selective_drop", 1)],
    "GradIngress.set_dscp_class": [("prio", 3), ("drop_threshold", 32)],
    "GradEgress.set_ecn_thresholds": [("normal", 32), ("pcn", 32)],
    "NoAction": [],
}

TABLES = {
    "GradIngress.arp_responder": ([("hdr.arp.oper", 16, EXACT), ("hdr.arp.tpa", 32, EXACT)],
                                  ["GradIngress.arp_reply", "GradIngress.drop"], None),
    "GradIngress.ipv4_lpm": ([("hdr.ipv4.dstAddr", 32, LPM)],
                             ["GradIngress.set_nhop", "GradIngress.drop"], "GradIngress.ecmp_selector"),
    "GradIngress.gradient_class": ([("hdr.gradient.job_id", 16, TERNARY),
                                    ("hdr.gradient.layer_id", 16, RANGE),
                                    ("hdr.gradient.mag_class", 8, RANGE)],
                                   ["GradIngress.set_class", "GradIngress.set_default_class"], None),
    "GradIngress.job_features": ([("hdr.gradient.job_id", 16, EXACT)],
                                 ["GradIngress.set_job_features", "NoAction"], None),
    "GradIngress.dscp_class": ([("hdr.ipv4.diffserv", 6, TERNARY)],
                               ["GradIngress.set_dscp_class", "GradIngress.set_default_class"], None),
    "GradEgress.ecn_config": ([("standard_metadata.egress_port", 9, EXACT)],
                              ["GradEgress.set_ecn_thresholds", "NoAction"], None),
}

COUNTERS = {
    "GradIngress.slot_seen_ctr": 1024, "GradIngress.slot_dropped_ctr": 1024,
    "GradIngress.queue_dropped_ctr": 4096, "GradEgress.queue_tx_ctr": 4096,
    "GradEgress.queue_marked_ctr": 4096, "GradEgress.slot_marked_ctr": 1024,
    "GradEgress.pcn_start_ctr": 512, "GradEgress.pcn_arrival_ctr": 512,
    "GradEgress.pcn_expired_ctr": 512,
    "GradIngress.stage_seen_ctr": 2048, "GradIngress.stage_dropped_ctr": 2048,
}


def build() -> p4info_pb2.P4Info:
    """The P4Info message."""
    info = p4info_pb2.P4Info()
    action_ids = {}
    for i, (name, params) in enumerate(ACTIONS.items(), 1):
        a = info.actions.add()
        a.preamble.id = 0x01000000 + i
        a.preamble.name = name
        a.preamble.alias = name.rsplit(".", 1)[-1]
        action_ids[name] = a.preamble.id
        for j, (pname, width) in enumerate(params, 1):
            a.params.add(id=j, name=pname, bitwidth=width)
    table_ids = {}
    for i, (name, (keys, actions, profile)) in enumerate(TABLES.items(), 1):
        t = info.tables.add()
        t.preamble.id = 0x02000000 + i
        t.preamble.name = name
        t.preamble.alias = name.rsplit(".", 1)[-1]
        table_ids[name] = t.preamble.id
        for j, (fname, width, kind) in enumerate(keys, 1):
            t.match_fields.add(id=j, name=fname, bitwidth=width, match_type=kind)
        for aname in actions:
            t.action_refs.add(id=action_ids[aname])
        t.size = 1024
        if profile:
            t.implementation_id = 0x11000001
    prof = info.action_profiles.add()
    prof.preamble.id = 0x11000001
    prof.preamble.name = "GradIngress.ecmp_selector"
    prof.preamble.alias = "ecmp_selector"
    prof.table_ids.append(table_ids["GradIngress.ipv4_lpm"])
    prof.with_selector = True
    prof.size = 1024
    prof.max_group_size = 16
    for i, (name, size) in enumerate(COUNTERS.items(), 1):
        c = info.counters.add()
        c.preamble.id = 0x12000000 + i
        c.preamble.name = name
        c.preamble.alias = name.rsplit(".", 1)[-1]
        c.spec.unit = p4info_pb2.CounterSpec.BOTH
        c.size = size
    return info
