"""DDL flows in a policy (issue 22, PCN with kernel-TCP pushes): validation, the ddl_flow
entries they become, and their P4Runtime form against the compiled data plane's P4Info."""
from __future__ import annotations

import pytest

from controller import p4names as N
from controller.entries import Action, Range, TableEntry, Ternary
from controller.errors import PolicyError
from controller.policy import DdlFlow, assign_slots, parse_policy, translate

LAYERS = [{"range": [0, 9], "loss_bound": 0.0}]


def policy_with(*flows: dict, job: int = 1):
    return parse_policy({"jobs": [{"job": job, "layers": LAYERS, "ddl_flows": list(flows)}]})


def ddl_entries(policy):
    return [e for e in translate(policy, assign_slots(policy)) if e.table == N.DDL_FLOW_TABLE]


def test_flows_parse_into_prefixes_protocol_and_port_range():
    policy = policy_with({"worker_rank": 0, "src": "10.0.2.1", "protocol": "tcp", "dst_ports": 5002},
                         {"worker_rank": 1, "src": "10.0.3.0/24", "dst": "10.0.1.1",
                          "protocol": 17, "dst_ports": [6000, 6099]})
    assert policy.jobs[0].ddl_flows == (
        DdlFlow(0, (0x0A000201, 32), None, 6, (5002, 5002)),
        DdlFlow(1, (0x0A000300, 24), (0x0A000101, 32), 17, (6000, 6099)))


def test_each_flow_becomes_one_entry_and_earlier_flows_win():
    policy = parse_policy({"jobs": [
        {"job": 1, "layers": LAYERS,
         "ddl_flows": [{"worker_rank": 0, "src": "10.0.2.1", "protocol": "tcp", "dst_ports": 5002}]},
        {"job": 7, "layers": LAYERS,
         "ddl_flows": [{"worker_rank": 3, "src": "10.0.3.0/24"}]}]})
    assert ddl_entries(policy) == [
        TableEntry(N.DDL_FLOW_TABLE, (
            (N.DDL_FLOW_KEY_SRC, Ternary(0x0A000201, 0xFFFFFFFF)),
            (N.DDL_FLOW_KEY_DST, Ternary(0, 0)),
            (N.DDL_FLOW_KEY_PROTOCOL, Ternary(6, 0xFF)),
            (N.DDL_FLOW_KEY_DST_PORT, Range(5002, 5002))),
            Action.of(N.SET_DDL_SENDER, job_id=1, worker_rank=0), priority=2),
        TableEntry(N.DDL_FLOW_TABLE, (
            (N.DDL_FLOW_KEY_SRC, Ternary(0x0A000300, 0xFFFFFF00)),
            (N.DDL_FLOW_KEY_DST, Ternary(0, 0)),
            (N.DDL_FLOW_KEY_PROTOCOL, Ternary(0, 0)),
            (N.DDL_FLOW_KEY_DST_PORT, Range(0, 0xFFFF))),
            Action.of(N.SET_DDL_SENDER, job_id=7, worker_rank=3), priority=1)]


def test_a_policy_without_flows_has_no_ddl_entries():
    assert ddl_entries(parse_policy({"jobs": [{"job": 1, "layers": LAYERS}]})) == []


def test_entries_encode_and_decode_with_the_data_planes_p4info(codec):
    policy = policy_with({"worker_rank": 2, "src": "10.0.2.0/24", "protocol": "tcp",
                          "dst_ports": [5002, 5003]})
    (entry,) = ddl_entries(policy)
    msg = codec.encode(entry)
    assert msg.table_entry.priority == 1
    # the don't-care destination is left out, as P4Runtime wants
    assert len(msg.table_entry.match) == 3
    assert codec.decode(msg) == codec.normalize(entry)


@pytest.mark.parametrize("flow, message", [
    ({"src": "10.0.2.1"}, "jobs[0].ddl_flows[0].worker_rank: missing"),
    ({"worker_rank": 0}, "jobs[0].ddl_flows[0]: names no field to match"),
    ({"worker_rank": 0xFFFF, "src": "10.0.2.1"},
     "jobs[0].ddl_flows[0].worker_rank: must be in [0, 65534], got 65535"),
    ({"worker_rank": 0, "src": "10.0.2.1/24"}, "jobs[0].ddl_flows[0].src: is not an IPv4 address or prefix"),
    ({"worker_rank": 0, "dst": "ps"}, "jobs[0].ddl_flows[0].dst: is not an IPv4 address or prefix"),
    ({"worker_rank": 0, "src": 167772673}, "jobs[0].ddl_flows[0].src: must be an IPv4 address or prefix"),
    ({"worker_rank": 0, "protocol": "sctp"}, "jobs[0].ddl_flows[0].protocol: must be tcp, udp or an IP"),
    ({"worker_rank": 0, "protocol": 300}, "jobs[0].ddl_flows[0].protocol: must be in [0, 255], got 300"),
    ({"worker_rank": 0, "dst_ports": [6000, 5000]}, "jobs[0].ddl_flows[0].dst_ports: lo 6000 is greater"),
    ({"worker_rank": 0, "dst_ports": 70000}, "jobs[0].ddl_flows[0].dst_ports[0]: must be in [0, 65535]"),
    ({"worker_rank": 0, "src": "10.0.2.1", "port": 1}, "jobs[0].ddl_flows[0].port: unknown field"),
])
def test_bad_flows_name_the_field(flow, message):
    with pytest.raises(PolicyError) as info:
        policy_with(flow)
    assert str(info.value).startswith(message)


def test_the_same_flow_twice_is_refused_within_and_across_jobs():
    flow = {"worker_rank": 0, "src": "10.0.2.1", "protocol": "tcp"}
    with pytest.raises(PolicyError, match=r"jobs\[0\].ddl_flows\[1\]: is the same flow as jobs\[0\].ddl_flows\[0\]"):
        policy_with(flow, {**flow, "worker_rank": 1})
    with pytest.raises(PolicyError, match=r"jobs\[1\].ddl_flows\[0\]: is the same flow as jobs\[0\].ddl_flows\[0\]"):
        parse_policy({"jobs": [{"job": 1, "layers": LAYERS, "ddl_flows": [flow]},
                               {"job": 2, "layers": LAYERS, "ddl_flows": [flow]}]})


def test_more_flows_than_the_table_holds_are_refused():
    flows = [{"worker_rank": 0, "dst_ports": p} for p in range(N.DDL_FLOW_TABLE_SIZE + 1)]
    with pytest.raises(PolicyError, match=r"jobs\[0\].ddl_flows: more than 256 DDL flows"):
        policy_with(*flows)
    assert len(ddl_entries(policy_with(*flows[:-1]))) == N.DDL_FLOW_TABLE_SIZE
