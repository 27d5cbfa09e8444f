"""Topology -> per-switch entities: ARP answers, /32 routes over all equal-cost next hops, queues."""
from __future__ import annotations

import pytest

from controller import p4names as N
from controller.entries import Action, Exact, Group, Lpm, Member, TableEntry, Ternary
from controller.errors import ConfigError
from controller.network import NetworkOptions, plan_switch, queue_settings, route_entities
from controller.topology import Topology

IP = {"h1": 0x0A000101, "h3": 0x0A000103, "h2": 0x0A000402}


def route(dst, member=None, group=None):
    return TableEntry(N.ROUTE_TABLE, ((N.ROUTE_KEY_DST, Lpm(dst, 32)),), member_id=member, group_id=group)


def nhop(port, src, dst):
    return Member(N.ECMP_PROFILE, port + 1, Action.of(N.SET_NHOP, src_mac=src, dst_mac=dst, port=port))


def test_equal_cost_paths_become_one_group(diamond_doc):
    topo = Topology.from_dict(diamond_doc)
    s1 = 0x00000A0001FE
    assert route_entities(topo, "s1") == [
        nhop(1, s1, 0x080000000101), nhop(2, s1, 0x00000A0002FE), nhop(3, s1, 0x00000A0003FE),
        nhop(4, s1, 0x080000000103),
        Group(N.ECMP_PROFILE, 1, (3, 4), N.ECMP_MAX_GROUP_SIZE),
        route(IP["h1"], member=2), route(IP["h3"], member=5), route(IP["h2"], group=1),
    ]


def test_single_next_hops_use_members(diamond_doc):
    topo = Topology.from_dict(diamond_doc)
    s2 = 0x00000A0002FE
    assert route_entities(topo, "s2") == [
        nhop(1, s2, 0x00000A0001FE), nhop(2, s2, 0x00000A0004FE),
        route(IP["h1"], member=2), route(IP["h3"], member=2), route(IP["h2"], member=3),
    ]
    groups = [e for e in route_entities(topo, "s4") if isinstance(e, Group)]
    assert groups == [Group(N.ECMP_PROFILE, 1, (3, 4), N.ECMP_MAX_GROUP_SIZE)]


def test_arp_answers_for_gateway_and_subnet_hosts(diamond_doc):
    plan = plan_switch(Topology.from_dict(diamond_doc), "s1")
    arp = [e for e in plan.entities if getattr(e, "table", None) == N.ARP_TABLE]
    mac = 0x00000A0001FE
    assert [e.match for e in arp] == [
        ((N.ARP_KEY_OPER, Exact(1)), (N.ARP_KEY_TPA, Exact(a))) for a in (IP["h1"], IP["h3"], 0x0A0001FE)]
    assert all(e.action == Action.of(N.ARP_REPLY, mac=mac) for e in arp)


def test_classification_defaults_and_ecn(diamond_doc):
    plan = plan_switch(Topology.from_dict(diamond_doc), "s1", NetworkOptions(ecn_normal=40, ecn_pcn=10),
                       ecn_overrides={2: (30, 5)})
    dscp = [e for e in plan.entities if getattr(e, "table", None) == N.DSCP_TABLE]
    assert len(dscp) == 7
    assert dscp[5] == TableEntry(N.DSCP_TABLE, ((N.DSCP_KEY, Ternary(6 << 3, 0x38)),),
                                 Action.of(N.SET_DSCP_CLASS, prio=6, drop_threshold=0xFFFFFFFF), priority=1)
    ecn = {e.match[0][1].value: e.action for e in plan.entities if getattr(e, "table", None) == N.ECN_TABLE}
    assert ecn == {1: Action.of(N.SET_ECN, normal=40, pcn=10), 2: Action.of(N.SET_ECN, normal=30, pcn=5),
                   3: Action.of(N.SET_ECN, normal=40, pcn=10), 4: Action.of(N.SET_ECN, normal=40, pcn=10)}


def test_ports_compare_their_ecn_threshold_with_their_occupancy_only_when_asked(diamond_doc):
    topo = Topology.from_dict(diamond_doc)

    def depth_ports(options: NetworkOptions) -> list[int]:
        return [e.match[0][1].value for e in plan_switch(topo, "s1", options).entities
                if getattr(e, "table", None) == N.ECN_DEPTH_TABLE]

    assert depth_ports(NetworkOptions()) == []
    assert depth_ports(NetworkOptions(ecn_depth="port")) == [1, 2, 3, 4]
    with pytest.raises(ConfigError, match="ecn_depth 'egress'"):
        NetworkOptions(ecn_depth="egress")


def test_queue_settings(diamond_doc):
    diamond_doc["switches"]["s4"]["queue_rate_pps"] = 1000
    topo = Topology.from_dict(diamond_doc)
    assert [q.command() for q in queue_settings(topo, "s4")] == [
        "set_queue_depth 64", "set_queue_rate 1000", "set_queue_rate 500 3"]
    assert [q.command() for q in queue_settings(topo, "s1")] == ["set_queue_depth 64"]


def test_bad_topologies_are_named(diamond_doc):
    del diamond_doc["hosts"]["h1"]["mac"]
    with pytest.raises(ConfigError, match=r"hosts.h1.mac: missing"):
        Topology.from_dict(diamond_doc)
    with pytest.raises(ConfigError, match="unknown switch 's9'"):
        plan_switch(Topology.from_dict({"name": "x"}), "s9")


def test_dscp_classes_stay_within_the_switch_queues(diamond_doc):
    diamond_doc["switches"]["s1"]["priority_queues"] = 4
    plan = plan_switch(Topology.from_dict(diamond_doc), "s1")
    prios = [e.action.param(N.SET_DSCP_PRIO) for e in plan.entities if getattr(e, "table", None) == N.DSCP_TABLE]
    assert prios == [1, 2, 3, 3, 3, 3, 3]
