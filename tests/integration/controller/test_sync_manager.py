"""Diff application, rollback of failed batches, and the controller over real gRPC test switches."""
from __future__ import annotations

import time

import pytest
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2

from controller import errors
from controller import p4names as N
from controller.manager import NetworkController
from support.controller_topologies import diamond
from support.p4runtime_server import TestP4RuntimeServer
from support.ports import free_port
from controller.policy import assign_slots, parse_policy, translate
from controller.sync import apply_changes, diff
from controller.topology import Topology

POLICY_A = {"jobs": [{"job": 1, "layers": [
    {"range": [0, 3], "loss_bound": 0.01, "priority": 6},
    {"range": [4, 9], "loss_bound": 0.02, "priority": 4},
    {"range": [10, 19], "loss_bound": 0.03, "priority": 3}]}]}
POLICY_B = {"jobs": [{"job": 1, "layers": [
    {"range": [0, 3], "loss_bound": 0.05, "priority": 6},          # modified
    {"range": [4, 9], "loss_bound": 0.02, "priority": 4},          # unchanged
    {"range": [20, 29], "loss_bound": 0.04, "priority": 2}]}]}     # inserted; [10, 19] deleted


def snapshot(server):
    with server.lock:
        return {k: v.SerializeToString(deterministic=True) for k, v in server.store.items()}


def entries_of(policy_doc, codec, previous=None):
    policy = parse_policy(policy_doc)
    return [codec.normalize(e) for e in translate(policy, assign_slots(policy, previous))]


def read_class(conn, codec):
    return [codec.decode(e) for e in conn.read([codec.wildcard_table(N.CLASS_TABLE)])]


@pytest.fixture
def primary(p4rt_server, p4info_msg):
    from controller.client import SwitchConnection
    conn = SwitchConnection("s1", p4rt_server.address, 1, (0, 10), 2.0)
    conn.connect()
    conn.set_pipeline(p4info_msg, b"{}")
    yield conn
    conn.close()


def test_only_differences_are_written(p4rt_server, primary, codec):
    apply_changes(primary, codec, diff(entries_of(POLICY_A, codec), []))
    p4rt_server.write_batches.clear()
    changes = diff(entries_of(POLICY_B, codec), read_class(primary, codec))
    assert changes.summary() == {"inserted": 1, "modified": 1, "deleted": 1}
    apply_changes(primary, codec, changes)
    kinds = [[u.type for u in batch] for batch in p4rt_server.write_batches]
    assert kinds == [[p4runtime_pb2.Update.INSERT, p4runtime_pb2.Update.MODIFY], [p4runtime_pb2.Update.DELETE]]
    assert sorted(map(repr, read_class(primary, codec))) == sorted(map(repr, entries_of(POLICY_B, codec)))
    p4rt_server.write_batches.clear()
    assert not diff(entries_of(POLICY_B, codec), read_class(primary, codec))


@pytest.mark.parametrize("failing", ["INSERT", "MODIFY", "DELETE"])
def test_failed_batch_is_rolled_back(p4rt_server, primary, codec, failing):
    apply_changes(primary, codec, diff(entries_of(POLICY_A, codec), []))
    before = snapshot(p4rt_server)
    kind = p4runtime_pb2.Update.Type.Value(failing)
    failed = []

    def fail_once(update):   # the chosen update fails; the rollback's own writes succeed
        if update.type == kind and not failed:
            failed.append(update)
            return code_pb2.RESOURCE_EXHAUSTED, "no room"
        return None
    p4rt_server.fail_hook = fail_once
    changes = diff(entries_of(POLICY_B, codec), read_class(primary, codec))
    with pytest.raises(errors.WriteError, match="update .: RESOURCE_EXHAUSTED: no room"):
        apply_changes(primary, codec, changes)
    assert failed and snapshot(p4rt_server) == before


def test_rollback_failure_is_reported(p4rt_server, primary, codec):
    apply_changes(primary, codec, diff(entries_of(POLICY_A, codec), []))
    p4rt_server.fail_hook = lambda u: (code_pb2.INTERNAL, "broken") \
        if u.type == p4runtime_pb2.Update.DELETE else None
    changes = diff(entries_of(POLICY_B, codec), read_class(primary, codec))
    with pytest.raises(errors.WriteError, match="rollback also failed .*partial update"):
        apply_changes(primary, codec, changes)


def test_policy_apply_rolls_back_every_switch(p4info_msg):
    servers = {f"s{i}": TestP4RuntimeServer().start() for i in range(1, 5)}
    try:
        topo = Topology.from_dict(diamond({n: s.address for n, s in servers.items()}))
        ctl = NetworkController(topo, p4info_msg, b"{}", set_queues=False, reconnect=False)
        assert ctl.start() == {n: None for n in servers}
        ctl.apply_policy(parse_policy(POLICY_A))
        before = {n: snapshot(s) for n, s in servers.items()}
        servers["s3"].fail_hook = lambda u: (code_pb2.INTERNAL, "disk on fire") \
            if u.type == p4runtime_pb2.Update.INSERT else None
        with pytest.raises(errors.WriteError, match="s3: Write failed"):
            ctl.apply_policy(parse_policy(POLICY_B))
        assert {n: snapshot(s) for n, s in servers.items()} == before
        assert ctl.state.policy == parse_policy(POLICY_A)     # the old policy stays current
        ctl.stop()
    finally:
        for s in servers.values():
            s.stop()


def test_network_programming_order_and_contents(p4info_msg):
    servers = {f"s{i}": TestP4RuntimeServer().start() for i in range(1, 5)}
    try:
        topo = Topology.from_dict(diamond({n: s.address for n, s in servers.items()}))
        ctl = NetworkController(topo, p4info_msg, b"{}", set_queues=False, reconnect=False)
        ctl.start()
        s1 = servers["s1"]
        levels = [[u.entity.WhichOneof("entity") for u in batch] for batch in s1.write_batches]
        assert levels[0] == ["action_profile_member"] * 4
        assert levels[1] == ["action_profile_group"]
        assert set(levels[2]) == {"table_entry"}
        assert len(s1.entities("table_entry")) == 3 + 3 + 7 + 4   # ARP, routes, DSCP, ECN
        # a second start finds everything in place and writes nothing
        s1.write_batches.clear()
        ctl2 = NetworkController(topo, p4info_msg, b"{}", set_queues=False, reconnect=False,
                                 election_id=(0, 101))
        ctl.stop()
        ctl2.start()
        assert s1.write_batches == [] and s1.pipeline_pushes == 1
        ctl2.stop()
    finally:
        for s in servers.values():
            s.stop()


def test_unreachable_switch_is_reported_and_restarted_switch_restored(p4info_msg):
    servers = {f"s{i}": TestP4RuntimeServer().start() for i in range(1, 4)}
    late_port = free_port()
    addrs = {n: s.address for n, s in servers.items()}
    addrs["s4"] = f"127.0.0.1:{late_port}"
    topo = Topology.from_dict(diamond(addrs))
    ctl = NetworkController(topo, p4info_msg, b"{}", set_queues=False, timeout=0.5)
    try:
        start = time.monotonic()
        results = ctl.start()
        assert time.monotonic() - start < 5
        assert results["s4"].startswith("s4: no P4Runtime server at")
        assert all(results[n] is None for n in servers)
        ctl.apply_policy(parse_policy(POLICY_A))
        status = {r["switch"]: r for r in ctl.switch_status()}
        assert status["s4"]["pipeline_loaded"] is False and status["s1"]["pipeline_loaded"] is True
        # s4 comes up later on its port: the background reconnect programs it, policy included
        late = TestP4RuntimeServer(late_port).start()
        servers["s4"] = late
        assert ctl.wait_reachable(["s4"], 15)
        assert len(late.entities("table_entry")) == 2 + 3 + 7 + 3 + 3   # ARP(h2, gw), routes, DSCP, ECN, policy
        # s2 restarts (state lost): it gets pipeline and state back
        before = snapshot(servers["s2"])
        servers["s2"].stop()
        servers["s2"].start()
        assert ctl.wait_reachable(["s2"], 15)
        assert snapshot(servers["s2"]) == before
        assert servers["s2"].pipeline_pushes == 2
        # it is counted as a restart (it came back empty), with its time from loss to programmed
        status = {r["switch"]: r for r in ctl.switch_status()}
        assert status["s2"]["switch_restarts"] == 1 and status["s1"]["switch_restarts"] == 0
        assert status["s2"]["last_recovery_s"] > 0 and status["s2"]["down_for_s"] is None
    finally:
        ctl.stop()
        for s in servers.values():
            s.stop()


def test_phase_reports_switch_bounds(p4info_msg):
    servers = {f"s{i}": TestP4RuntimeServer().start() for i in range(1, 5)}
    try:
        topo = Topology.from_dict(diamond({n: s.address for n, s in servers.items()}))
        ctl = NetworkController(topo, p4info_msg, b"{}", set_queues=False, reconnect=False)
        ctl.start()
        ctl.apply_policy(parse_policy({"jobs": [{"job": 1, "phases": [
            {"rounds": [0, 99], "low": 0.008, "high": 0.048}],
            "layers": [{"range": [0, 3], "loss_bound": 0.01, "pull_bound": 0.004}]}]}))

        def push_bp():
            entry = ctl.installed("s2", [N.CLASS_TABLE])[0]
            return entry.action.param(N.SET_CLASS_PUSH_BOUND)
        assert push_bp() == 100
        assert ctl.set_job_state(1, 5, critical=False)["switches"]["s2"]["modified"] == 1
        assert push_bp() == 480
        ctl.set_job_state(1, 6, critical=True)
        assert push_bp() == 80
        with pytest.raises(errors.PolicyError, match="no job 7"):
            ctl.set_job_state(7, 1, False)
        ctl.stop()
    finally:
        for s in servers.values():
            s.stop()


def test_backup_controller_resyncs_when_primary_again(p4info_msg):
    servers = {f"s{i}": TestP4RuntimeServer().start() for i in range(1, 5)}
    topo = Topology.from_dict(diamond({n: s.address for n, s in servers.items()}))
    daemon = NetworkController(topo, p4info_msg, b"{}", set_queues=False, election_id=(0, 100))
    other = NetworkController(topo, p4info_msg, b"{}", set_queues=False, reconnect=False,
                              election_id=(0, 200))
    try:
        daemon.start()
        daemon.apply_policy(parse_policy(POLICY_A))
        want = snapshot(servers["s1"])
        assert other.start(push_pipeline=False, sync=False) == {n: None for n in servers}
        assert snapshot(servers["s1"]) == want     # a one-shot controller writes nothing at start
        deadline = time.monotonic() + 5
        while daemon.reachable() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert daemon.reachable() == []            # backup now: it does not write
        with pytest.raises(errors.UnreachableError):
            daemon.set_pcn("s1", 2, threshold=3)
        other.apply_policy(parse_policy(POLICY_B))
        assert snapshot(servers["s1"]) != want
        other.stop()                               # the daemon is primary again and restores its state
        deadline = time.monotonic() + 10
        while snapshot(servers["s1"]) != want and time.monotonic() < deadline:
            time.sleep(0.05)
        assert snapshot(servers["s1"]) == want
    finally:
        daemon.stop()
        other.stop()
        for s in servers.values():
            s.stop()


def test_policy_priority_must_exist_on_every_switch(p4info_msg):
    doc = diamond()
    doc["switches"]["s3"]["priority_queues"] = 4
    ctl = NetworkController(Topology.from_dict(doc), p4info_msg, b"{}", set_queues=False, reconnect=False)
    with pytest.raises(errors.PolicyError) as info:
        ctl.apply_policy(parse_policy(POLICY_A))
    assert str(info.value) == ("jobs[0].layers[0].priority: queue 6 does not exist on switch s3 "
                               "(4 priority queues: 0..3)")
