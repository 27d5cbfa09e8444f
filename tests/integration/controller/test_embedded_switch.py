"""The controller against the embedded switch over real gRPC: pipeline push, network and policy
entries read back exactly, diffs, rollback of a batch the switch rejects, and a live bound change
that changes the switch's drop behaviour.

Skipped only while the compiler back end or the switch's P4Runtime server is missing.
"""
from __future__ import annotations

import json
import struct
import time

import pytest

from p4target.compiler import compile_file
from p4target.switch.p4runtime import start_p4runtime_server
from p4target.switch.target import SwitchTarget

from controller import errors
from controller import p4names as N
from controller.client import SwitchConnection
from controller.entries import Action, Range, TableEntry, Ternary
from controller.manager import NetworkController
from controller.network import NetworkOptions
from controller.p4info import P4Info
from controller.policy import assign_slots, load_policy, parse_policy, translate
from controller.sync import Changes, apply_changes, diff
from controller.topology import Topology

ROUTER_MAC = {"s1": "00:00:0a:00:01:fe", "s2": "00:00:0a:00:02:fe"}
H1_MAC, H2_MAC = "08:00:00:00:01:01", "08:00:00:00:02:02"


@pytest.fixture(scope="module")
def program():
    return compile_file("p4src/gradlane.p4", include_dirs=["p4src"])


class Switch:
    """An embedded switch with its P4Runtime server; frames it sends are collected."""

    def __init__(self, device_id: int) -> None:
        self.sent: list[tuple[int, bytes]] = []
        self.target = SwitchTarget(device_id=device_id, cpu_port=255, priority_queues=8,
                                   queue_depth=64, transmit=lambda p, f: self.sent.append((p, f)))
        self.server = start_p4runtime_server(self.target, "127.0.0.1:0")
        self.address = f"127.0.0.1:{self.server.port}"

    def stop(self) -> None:
        self.server.stop()
        self.target.stop()


@pytest.fixture
def switches():
    made = {"s1": Switch(1), "s2": Switch(2)}
    yield made
    for s in made.values():
        s.stop()


def topology(switches) -> Topology:
    """h1 - s1 - s2 - h2 (h1 also reachable directly: one switch path each way)."""
    return Topology.from_dict({
        "name": "line",
        "hosts": {
            "h1": {"ip": "10.0.1.1", "prefix_len": 24, "mac": H1_MAC, "gateway": "10.0.1.254",
                   "switch": "s1", "switch_port": 1, "role": "worker"},
            "h2": {"ip": "10.0.2.2", "prefix_len": 24, "mac": H2_MAC, "gateway": "10.0.2.254",
                   "switch": "s2", "switch_port": 1, "role": "ps"},
        },
        "switches": {n: {"device_id": i + 1, "grpc_addr": s.address, "thrift_port": 59901 + i,
                         "router_mac": ROUTER_MAC[n]} for i, (n, s) in enumerate(switches.items())},
        "links": [{"a": "h1", "b": "s1", "b_port": 1}, {"a": "h2", "b": "s2", "b_port": 1},
                  {"a": "s1", "a_port": 2, "b": "s2", "b_port": 2}],
    })


@pytest.fixture
def controller(program, switches):
    ctl = NetworkController(topology(switches), program.p4info, json.dumps(program.bmv2_json).encode(),
                            set_queues=False, timeout=5.0)
    assert ctl.start() == {"s1": None, "s2": None}
    yield ctl
    ctl.stop()


def test_p4names_exist_in_the_compiled_p4info(program):
    info = P4Info(program.p4info)
    for table, keys in [(N.ARP_TABLE, [N.ARP_KEY_OPER, N.ARP_KEY_TPA]), (N.ROUTE_TABLE, [N.ROUTE_KEY_DST]),
                        (N.CLASS_TABLE, [N.CLASS_KEY_JOB, N.CLASS_KEY_LAYER, N.CLASS_KEY_MAG]),
                        (N.DSCP_TABLE, [N.DSCP_KEY]), (N.ECN_TABLE, [N.ECN_KEY_PORT]),
                        (N.ECN_DEPTH_TABLE, [N.ECN_KEY_PORT]),
                        (N.JOB_FEATURES_TABLE, [N.JOB_FEATURES_KEY_JOB]),
                        (N.DDL_FLOW_TABLE, [N.DDL_FLOW_KEY_SRC, N.DDL_FLOW_KEY_DST,
                                            N.DDL_FLOW_KEY_PROTOCOL, N.DDL_FLOW_KEY_DST_PORT])]:
        assert [info.match_field(table, k).name for k in keys] == keys
    for action, params in [(N.ARP_REPLY, [N.ARP_REPLY_MAC]),
                           (N.SET_NHOP, [N.SET_NHOP_SRC_MAC, N.SET_NHOP_DST_MAC, N.SET_NHOP_PORT]),
                           (N.SET_CLASS, [N.SET_CLASS_PRIO, N.SET_CLASS_ELIGIBLE, N.SET_CLASS_SLOT,
                                          N.SET_CLASS_PUSH_BOUND, N.SET_CLASS_PULL_BOUND,
                                          N.SET_CLASS_DROP_THRESHOLD]),
                           (N.SET_DSCP_CLASS, [N.SET_DSCP_PRIO, N.SET_DSCP_DROP_THRESHOLD]),
                           (N.SET_ECN, [N.SET_ECN_NORMAL, N.SET_ECN_PCN]),
                           (N.COMPARE_PORT_OCCUPANCY, []),
                           (N.SET_JOB_FEATURES, [N.SET_JOB_FEATURES_SPRAY, N.SET_JOB_FEATURES_PRIORITY,
                                                 N.SET_JOB_FEATURES_DROP]),
                           (N.SET_DDL_SENDER, [N.SET_DDL_SENDER_JOB, N.SET_DDL_SENDER_RANK])]:
        assert info.action(action).preamble.name == action
        assert [info.param(action, p).name for p in params] == params
    for counter in (N.SLOT_SEEN_CTR, N.SLOT_DROPPED_CTR, N.SLOT_MARKED_CTR, N.QUEUE_DROPPED_CTR,
                    N.QUEUE_TX_CTR, N.QUEUE_MARKED_CTR, N.PCN_START_CTR, N.PCN_ARRIVAL_CTR,
                    N.PCN_EXPIRED_CTR, N.STAGE_SEEN_CTR, N.STAGE_DROPPED_CTR):
        assert info.counter_id(counter)
    assert info.action_profile_id(N.ECMP_PROFILE)
    assert info.match_field(N.DSCP_TABLE, N.DSCP_KEY).bitwidth == 6


def test_policy_file_in_exact_entries_out(controller):
    policy = load_policy("controller/policies/default.yaml")
    summary = controller.apply_policy(policy)
    assert summary["switches"] == {s: {"inserted": 3, "modified": 0, "deleted": 0} for s in ("s1", "s2")}
    want = [controller.codec.normalize(e) for e in translate(policy, assign_slots(policy))]
    for name in ("s1", "s2"):
        got = controller.installed(name, [N.CLASS_TABLE])
        assert sorted(map(repr, got)) == sorted(map(repr, want))
        # and the whole network state too: what was planned is what the switch holds
        everything = controller.installed(name, [N.ARP_TABLE, N.ROUTE_TABLE, N.DSCP_TABLE, N.ECN_TABLE,
                                                 N.CLASS_TABLE], [N.ECMP_PROFILE])
        assert not diff(controller.desired(name), everything)
    first = controller.installed("s1", [N.CLASS_TABLE])[0]
    rule = policy.jobs[0].rules[0]   # layers 0..3, every magnitude: bounds in basis points
    assert (rule.loss_bound, rule.pull_bound) == (0.1, 0.025)
    assert first == TableEntry(
        N.CLASS_TABLE, ((N.CLASS_KEY_JOB, Ternary(1, 0xFFFF)), (N.CLASS_KEY_LAYER, Range(0, 3)),
                        (N.CLASS_KEY_MAG, Range(0, 7))),
        Action.of(N.SET_CLASS, prio=6, drop_eligible=1, slot=0, push_bound_bp=1000, pull_bound_bp=250,
                  drop_threshold=16), priority=1)


class CountingConnection(SwitchConnection):
    """A real connection that also records the size of each batch it writes."""

    batches: list[int]

    def write(self, updates, *args, **kwargs):
        self.batches.append(len(updates))
        return super().write(updates, *args, **kwargs)


def test_diff_application_writes_only_changes(controller):
    a = parse_policy({"jobs": [{"job": 1, "layers": [
        {"range": [0, 3], "loss_bound": 0.01}, {"range": [4, 9], "loss_bound": 0.02},
        {"range": [10, 19], "loss_bound": 0.03}]}]})
    b = parse_policy({"jobs": [{"job": 1, "layers": [
        {"range": [0, 3], "loss_bound": 0.05}, {"range": [4, 9], "loss_bound": 0.02},
        {"range": [20, 29], "loss_bound": 0.04}]}]})
    controller.apply_policy(a)
    summary = controller.apply_policy(b)
    assert summary["switches"]["s1"] == {"inserted": 1, "modified": 1, "deleted": 1}
    assert controller.apply_policy(b)["switches"]["s1"] == {"inserted": 0, "modified": 0, "deleted": 0}
    got = controller.installed("s1", [N.CLASS_TABLE])
    assert sorted(map(repr, got)) == sorted(map(repr, (controller.codec.normalize(e)
                                                       for e in controller.policy_entries())))
    # the unchanged rule kept its slot (its counters continue)
    slots = {(e.match[1][1].low, e.match[1][1].high): e.action.param("slot") for e in got}
    assert slots[(4, 9)] == 1


def test_rejected_batch_is_rolled_back_on_every_switch(controller):
    controller.apply_policy(load_policy("controller/policies/default.yaml"))
    # fill s2's class table with foreign entries, leaving no room for new ones
    conn = controller.switches["s2"].conn
    codec = controller.codec
    size = next(t.size for t in controller.p4info_msg.tables if t.preamble.name == N.CLASS_TABLE)
    filler = [TableEntry(N.CLASS_TABLE, ((N.CLASS_KEY_JOB, Ternary(999, 0xFFFF)),
                                         (N.CLASS_KEY_LAYER, Range(i, i))),
                         Action.of(N.SET_DEFAULT_CLASS), priority=1) for i in range(size - 3)]
    conn.write([codec.update("INSERT", e) for e in filler])
    before = {n: sorted(map(repr, controller.installed(n, [N.CLASS_TABLE]))) for n in ("s1", "s2")}
    new = parse_policy({"jobs": [{"job": 1, "layers": [{"range": [0, 3], "loss_bound": 0.2},
                                                       {"range": [4, 7], "loss_bound": 0.1}]},
                                 {"job": 2, "layers": [{"range": [0, 9], "loss_bound": 0.1}]}]})
    with pytest.raises(errors.WriteError, match="^s2: Write failed: .*RESOURCE_EXHAUSTED"):
        controller.apply_policy(new)
    after = {n: sorted(map(repr, controller.installed(n, [N.CLASS_TABLE]))) for n in ("s1", "s2")}
    assert after == before
    assert controller.state.policy == load_policy("controller/policies/default.yaml")


def test_failed_updates_inside_one_batch_are_undone(controller):
    codec = controller.codec
    conn = controller.switches["s1"].conn
    existing = controller.installed("s1", [N.ECN_TABLE])
    before = sorted(map(repr, controller.installed("s1", [N.ECN_TABLE, N.DSCP_TABLE])))
    dscp_new = TableEntry(N.DSCP_TABLE, ((N.DSCP_KEY, Ternary(0x2E, 0x3F)),),
                          Action.of(N.SET_DSCP_CLASS, prio=6, drop_threshold=5), priority=2)
    changes = Changes(inserts=[dscp_new, existing[0]])          # the second one already exists
    with pytest.raises(errors.WriteError) as info:
        apply_changes(conn, codec, changes)
    assert [u.code for u in info.value.updates] == ["OK", "ALREADY_EXISTS"]
    assert sorted(map(repr, controller.installed("s1", [N.ECN_TABLE, N.DSCP_TABLE]))) == before


def test_restarted_switch_gets_pipeline_and_state_back(program, switches, controller):
    controller.apply_policy(load_policy("controller/policies/default.yaml"))
    want = sorted(map(repr, controller.installed("s2", [N.CLASS_TABLE, N.ROUTE_TABLE])))
    old = switches["s2"]
    port = old.server.port
    old.stop()
    time.sleep(0.3)
    fresh = Switch.__new__(Switch)
    fresh.sent = []
    fresh.target = SwitchTarget(device_id=2, cpu_port=255, priority_queues=8, queue_depth=64,
                                transmit=lambda p, f: fresh.sent.append((p, f)))
    fresh.server = start_p4runtime_server(fresh.target, f"127.0.0.1:{port}")
    fresh.address = old.address
    switches["s2"] = fresh
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and (controller.switches["s2"].restarts == 0
                                           or "s2" not in controller.reachable()):
        time.sleep(0.1)
    assert controller.switches["s2"].restarts == 1
    assert sorted(map(repr, controller.installed("s2", [N.CLASS_TABLE, N.ROUTE_TABLE]))) == want


# -- packets ----------------------------------------------------------------------------------
def _mac(text: str) -> bytes:
    return bytes(int(x, 16) for x in text.split(":"))


def _checksum(data: bytes) -> int:
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def gradient_frame(job: int, layer: int, round_: int, seq: int, mag: int = 0) -> bytes:
    """h1 -> h2 gradient DATA packet (UDP 19527), 16 float32 of payload."""
    payload = bytes(64)
    grad = struct.pack("!BBHHHIBBHIIHHI", (1 << 4) | 0, 0, job, 0, layer, round_, mag, 0,
                       len(payload), seq, seq * 16, 0, 0, 0)
    udp_len = 8 + len(grad) + len(payload)
    udp = struct.pack("!HHHH", 40000, 19527, udp_len, 0)
    total = 20 + udp_len
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, total, seq & 0xFFFF, 0, 64, 17, 0,
                     bytes([10, 0, 1, 1]), bytes([10, 0, 2, 2]))
    ip = ip[:10] + struct.pack("!H", _checksum(ip)) + ip[12:]
    eth = _mac(ROUTER_MAC["s1"]) + _mac(H1_MAC) + b"\x08\x00"
    return eth + ip + udp + grad + payload


def _burst(switch: Switch, round_: int, count: int, pps: float = 1600.0) -> None:
    """Feed at ``pps`` (above the queue rate, so the queue builds) rather than all at once: the
    egress side, which records the queue depth ingress reads, must get to run during the burst."""
    start = time.monotonic()
    for seq in range(count):
        switch.target.receive(1, gradient_frame(1, 2, round_, seq))
        delay = start + (seq + 1) / pps - time.monotonic()
        if delay > 0:
            time.sleep(delay)


def _wait_sent(switch: Switch, count: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while len(switch.sent) < count:
        assert time.monotonic() < deadline, f"the switch sent {len(switch.sent)} of {count} packets in {timeout} s"
        time.sleep(0.005)


def _wait_drained(switch: Switch, expect_at_least: int, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    last = -1
    while time.monotonic() < deadline:
        n = len(switch.sent)
        if n >= expect_at_least and n == last:
            return
        last = n
        time.sleep(0.3)


def test_changing_a_layer_bound_changes_drops(switches, controller):
    s1 = switches["s1"]
    s1.target.set_queue_depth(1000, port=2)      # no tail drops: every loss is a selective drop
    s1.target.set_queue_rate(400, port=2)        # slower than the burst arrives: the queue builds
    strict = {"jobs": [{"job": 1, "layers": [{"range": [0, 3], "loss_bound": 0.0, "priority": 3,
                                              "drop_eligible": True, "drop_threshold": 0}]}]}
    controller.apply_policy(parse_policy(strict))
    _burst(s1, round_=1, count=300)
    _wait_drained(s1, 300)
    row = controller.stats("s1")["s1"]["classes"][0]
    assert (row["seen"], row["dropped"]) == (300, 0)
    assert len(s1.sent) == 300

    # live change: layers 0-3 may now lose 20 %; nothing restarts
    assert controller.apply_policy(parse_policy({"jobs": [{"job": 1, "layers": [
        {"range": [0, 3], "loss_bound": 0.2, "priority": 3, "drop_eligible": True,
         "drop_threshold": 0}]}]}))["switches"]["s1"]["modified"] == 1
    s1.sent.clear()
    _burst(s1, round_=2, count=300)
    _wait_drained(s1, 200)
    row = controller.stats("s1")["s1"]["classes"][0]
    dropped = row["dropped"]
    print(f"selective drops at a 20 % bound: {dropped} of 300")
    assert row["seen"] == 600
    assert 0 < dropped <= 60                       # within the 20 % bound of the round
    assert dropped >= 30                           # and the switch did use the budget under congestion
    assert len(s1.sent) == 300 - dropped
    queues = {(q["port"], q["prio"]): q for q in controller.stats("s1")["s1"]["queues"]}
    assert queues[(2, 3)]["dropped"] == dropped


def _ecn_frame(seq: int, tos: int = 0x02) -> bytes:
    """h1 -> h2 ordinary UDP packet, ECT(0) by default, so the switch may CE-mark it."""
    udp = struct.pack("!HHHH", 5000, 6000, 8 + 32, 0) + bytes(32)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, tos, 20 + len(udp), seq, 0, 64, 17, 0,
                     bytes([10, 0, 1, 1]), bytes([10, 0, 2, 2]))
    ip = ip[:10] + struct.pack("!H", _checksum(ip)) + ip[12:]
    return _mac(ROUTER_MAC["s1"]) + _mac(H1_MAC) + b"\x08\x00" + ip + udp


def test_ecn_threshold_set_through_pcn_changes_marking(switches, controller):
    s1 = switches["s1"]
    s1.target.set_queue_depth(1000, port=2)
    s1.target.set_queue_rate(400, port=2)
    assert controller.set_pcn("s1", 2, normal=500)["normal"] == 500
    for seq in range(100):
        s1.target.receive(1, _ecn_frame(seq))
    _wait_drained(s1, 100)
    marked = sum(q["marked"] for q in controller.stats("s1")["s1"]["queues"])
    assert marked == 0                                 # the queue never gets 500 deep
    assert controller.set_pcn("s1", 2, normal=2)["normal"] == 2
    s1.sent.clear()
    for seq in range(100):
        s1.target.receive(1, _ecn_frame(seq))
    _wait_drained(s1, 100)
    ce = sum(1 for _, f in s1.sent if f[15] & 0x03 == 0x03)
    marked = sum(q["marked"] for q in controller.stats("s1")["s1"]["queues"])
    assert ce > 0 and marked == ce
    rows = {(r["switch"], r["port"]): r for r in controller.pcn_table()}
    assert (rows[("s1", 2)]["normal"], rows[("s1", 2)]["pcn"]) == (2, 10)


@pytest.mark.parametrize("ecn_depth", ["queue", "port"])
def test_a_port_compares_its_ecn_threshold_with_its_occupancy_when_told(program, switches, ecn_depth):
    """100 Not-ECT packets wait in queue 0 of s1's port 2; 10 ECT ones of IP precedence 5
    (queue 5) come after them and leave first. Compared with their own queue (the default)
    they are never marked; with the port's occupancy (NetworkOptions.ecn_depth 'port', the
    ecn_depth table) every one is. The program knows another queue's depth as of its last
    dequeue, so the ECT packets are sent once queue 0 has dequeued with all the others in, and
    the port drains slowly enough (25 packets/s: 2.4 s above the threshold of 40) for a loaded
    machine to send them in time."""
    ctl = NetworkController(topology(switches), program.p4info, json.dumps(program.bmv2_json).encode(),
                            set_queues=False, timeout=5.0, options=NetworkOptions(ecn_depth=ecn_depth))
    assert ctl.start() == {"s1": None, "s2": None}
    try:
        ports = len(ctl.installed("s1", [N.ECN_TABLE]))
        assert len(ctl.installed("s1", [N.ECN_DEPTH_TABLE])) == (ports if ecn_depth == "port" else 0)
        s1 = switches["s1"]
        s1.target.set_queue_depth(1000, port=2)
        s1.target.set_queue_rate(25, port=2)
        for seq in range(100):
            s1.target.receive(1, _ecn_frame(seq, tos=0x00))
        _wait_sent(s1, len(s1.sent) + 1)     # a dequeue with all of them in
        for seq in range(100, 110):
            s1.target.receive(1, _ecn_frame(seq, tos=(5 << 5) | 0x02))
        _wait_drained(s1, 110)
        high = [f for _, f in s1.sent if f[15] >> 5 == 5]
        assert len(high) == 10
        marked = [f[15] & 0x03 == 0x03 for f in high]
        assert marked == [ecn_depth == "port"] * 10
    finally:
        ctl.stop()


def test_packet_out_enters_the_pipeline(switches, controller):
    s1 = switches["s1"]
    controller.switches["s1"].conn.packet_out(_ecn_frame(1))
    deadline = time.monotonic() + 5
    while not s1.sent and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [port for port, _ in s1.sent] == [2]        # routed towards h2 like any packet
