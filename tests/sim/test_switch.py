"""The simulated switch behaves as the controller's entries say: strict priority, selective
drop within the loss bound (never for CRITICAL), ECN marking above the port's threshold and
PCN's lowered one; and ns-3's TCP completes a job's rounds. Each test runs a tiny simulation
(ns-3 is loaded once per session, ~10 s)."""
from __future__ import annotations

from dataclasses import replace

import pytest

from controller.errors import ConfigError
from controller.network import NetworkOptions
from controller.policy import load_policy, parse_policy
from experiments import config as configs
from experiments.backends.ns3 import harness
from sim.errors import SimError
from hosts import wire
from sim.network import SimNetwork, SimOptions
from sim.rounds import run_tcp_rounds
from controller.topologies import TopoParams, build_topology

GRADIENT_PORT = 19527
PLAIN_PORT = 9999
POLICY = load_policy("controller/policies/default.yaml")


@pytest.fixture
def incast():
    """A 2-worker incast whose s1 -> s2 link sends 1000 packets/s; closed after the test."""
    nets = []

    def build(bottleneck_pps: float | None = 1000.0, workers: int = 2,
              ecn_depth: str = "queue") -> SimNetwork:
        topo = build_topology("incast", TopoParams(workers=workers, background=0,
                                                   bottleneck_pps=bottleneck_pps, queue_depth=64))
        net = SimNetwork(topo, POLICY, SimOptions(rate_gbps=1.0,
                                                  network=NetworkOptions(ecn_depth=ecn_depth)))
        nets.append(net)
        return net

    yield build
    for net in nets:
        net.close()


def gradient(layer: int, mag: int, seq: int, flags: int = 0, round_: int = 1, kind: int = 0) -> bytes:
    """A gradient packet of 1500 bytes on the wire (the bottleneck's packets/s assume 1500)."""
    payload = 1500 - 28 - wire.HEADER_LEN
    return wire.pack_header(kind, flags, 1, 0, layer, round_, mag, payload, seq) + bytes(payload)


def sender(net: SimNetwork, host: str, port: int):
    return net.cpp.DatagramSender(net.node(host), net.address("ps"), port)


def sink(net: SimNetwork, port: int):
    return net.cpp.DatagramSink(net.node("ps"), port, wire.HEADER_LEN)


def chunk_seqs(s) -> list[int]:
    """The chunk_seq of every gradient packet `s` received, in arrival order."""
    return [wire.HEADER.unpack_from(bytes(h))[9] for h in s.heads]


def test_strict_priority_serves_the_higher_queue_first(incast):
    net = incast()
    low, high, rx = sender(net, "w1", GRADIENT_PORT), sender(net, "w2", GRADIENT_PORT), sink(net, GRADIENT_PORT)
    for i in range(40):     # later layers, small magnitude: queue 4 in the default policy
        low.Add(1e-6 * i, gradient(5, 1, i), wire.data_tos(1, True))
    for i in range(10):     # front layers: queue 6, sent once the bottleneck queue is long
        high.Add(0.005 + 1e-6 * i, gradient(0, 5, 100 + i), wire.data_tos(5, True))
    net.run(1.0)
    order = chunk_seqs(rx)
    counters = net.switches["s1"].counters()
    # both classes are drop-eligible within their bounds (5 % and 10 % in the default policy):
    # whatever the bounds let go, the rest arrives, and nothing else is lost
    assert counters["tail_drops"] == 0
    assert len(order) == 50 - counters["selective_drops"]
    assert set(order) <= {*range(40), *range(100, 110)}
    firsts = [i for i, seq in enumerate(order) if seq >= 100]
    assert len(firsts) >= 9
    assert firsts == list(range(firsts[0], firsts[0] + len(firsts)))   # served back to back
    assert firsts[0] < 15                                              # ahead of ~25 queued low packets
    telemetry = [wire.HEADER.unpack_from(bytes(h))[11:14] for h in rx.heads]   # max depth, hops, delay
    assert all(hops == 2 for _, hops, _ in telemetry)                        # s1 and s2 stamped
    assert max(depth for depth, _, _ in telemetry) >= 25 and max(d for _, _, d in telemetry) > 20_000
    queues = counters["queues"]
    uplink = net.topo.links[-1].a_port
    assert queues[f"{uplink}/6"]["tx"] == len(firsts)
    assert queues[f"{uplink}/4"]["tx"] == len(order) - len(firsts)


@pytest.mark.parametrize("critical", [False, True])
def test_selective_drop_stays_within_the_bound_and_spares_critical(incast, critical):
    net = incast()
    tx, rx = sender(net, "w1", GRADIENT_PORT), sink(net, GRADIENT_PORT)
    flags = 0x10 if critical else 0
    bound = POLICY.jobs[0].rules[0].loss_bound   # layer 0's push bound in the default policy
    for i in range(600):    # drop threshold 16 packets
        tx.Add(1e-6 * i, gradient(0, 5, i, flags), wire.data_tos(5, not critical))
    net.run(2.0)
    s1 = net.switches["s1"]
    seen, dropped = int(s1.state.slot_seen[0]), int(s1.state.slot_dropped[0])
    counters = s1.counters()
    assert seen == 600
    if critical:
        assert dropped == 0 and counters["selective_drops"] == 0
    else:
        assert 0 < dropped <= seen * bound
        assert counters["selective_drops"] == dropped
    assert len(rx.times) == 600 - dropped - counters["tail_drops"]


def test_ecn_marks_above_the_ports_threshold(incast):
    net = incast()
    tx, rx = sender(net, "w1", PLAIN_PORT), sink(net, PLAIN_PORT)
    for i in range(60):
        tx.Add(1e-6 * i, bytes(1472), wire.ECN_ECT0)
    net.run(1.0)
    ce = [t & 3 == wire.ECN_CE for t in rx.tos]
    assert len(ce) == 60
    assert not any(ce[:40])              # the normal threshold is 40 packets
    assert all(ce[45:])
    assert net.switches["s1"].counters()["marked"] == sum(ce)


@pytest.mark.parametrize("ecn_depth", ["queue", "port"])
def test_marking_on_the_ports_occupancy_is_off_by_default(incast, ecn_depth):
    """Queue 4 (drop-eligible, Not-ECT: never marked) fills; ECT DATA of a higher class behind
    it is marked only where the controller asks the ports to compare the threshold with their
    occupancy (NetworkOptions.ecn_depth, the ecn_depth table)."""
    net = incast(ecn_depth=ecn_depth)
    low, high, rx = sender(net, "w1", GRADIENT_PORT), sender(net, "w2", GRADIENT_PORT), sink(net, GRADIENT_PORT)
    for i in range(50):     # later layers, small magnitude: queue 4, drop-eligible
        low.Add(1e-6 * i, gradient(5, 1, i), wire.data_tos(1, True))
    for i in range(10):     # later layers, large magnitude: queue 5, never dropped, ECT
        high.Add(0.005 + 1e-6 * i, gradient(5, 6, 100 + i), wire.data_tos(6, False))
    net.run(1.0)
    seqs = chunk_seqs(rx)
    ce_high = [t & 3 == wire.ECN_CE for seq, t in zip(seqs, rx.tos) if seq >= 100]
    assert len(ce_high) == 10
    assert net.switches["s1"].counters()["tail_drops"] == 0
    if ecn_depth == "queue":
        assert not any(ce_high)          # their own queue never reaches the threshold of 40
    else:
        assert all(ce_high)              # ~40 low-class packets wait ahead of them on the port


def test_the_config_sets_the_marking_depth_and_a_bad_one_is_refused():
    cfg = configs.load(configs.default_path("ltp_incast"), quick=True)
    assert harness.sim_options(cfg).network.ecn_depth == "queue"
    with pytest.raises(SimError, match="sim_ecn_depth"):
        harness.sim_options(replace(cfg, params={**cfg.params, "sim_ecn_depth": "both"}))
    assert harness.sim_options(replace(cfg, params={**cfg.params, "sim_ecn_depth": "port"})).network.ecn_depth == "port"
    with pytest.raises(ConfigError, match="ecn_depth"):
        NetworkOptions(ecn_depth="egress")


def test_pcn_start_lowers_the_threshold_until_the_burst_arrives(incast):
    net = incast()
    ctl, tx, rx = sender(net, "w2", GRADIENT_PORT), sender(net, "w1", PLAIN_PORT), sink(net, PLAIN_PORT)
    ctl.Add(0.0, gradient(0, 0, 0, kind=7), wire.pcn_tos(start=True, threshold=10))
    for i in range(30):
        tx.Add(0.001 + 1e-6 * i, bytes(1472), wire.ECN_ECT0)
    net.run(1.0)
    ce = [t & 3 == wire.ECN_CE for t in rx.tos]
    assert not any(ce[:10]) and all(ce[15:30])
    counters = net.switches["s1"].counters()
    assert counters["pcn_starts"] == 1 and counters["pcn_arrivals"] == 0


def test_a_ddl_flow_ends_its_workers_pending_start():
    """A flow without the gradient header that the policy names (ddl_flows) is the burst of the
    worker whose START is pending: its first packet brings the normal threshold back."""
    topo = build_topology("incast", TopoParams(workers=2, background=0, bottleneck_pps=1000.0,
                                               queue_depth=64))
    policy = parse_policy({"jobs": [{"job": 1, "layers": [{"range": [0, 9], "loss_bound": 0.0}],
                                     "ddl_flows": [{"worker_rank": 0, "src": topo.hosts["w1"].ip,
                                                    "protocol": "udp", "dst_ports": PLAIN_PORT}]}]})
    net = SimNetwork(topo, policy, SimOptions(rate_gbps=1.0))
    try:
        ctl, tx, rx = sender(net, "w1", GRADIENT_PORT), sender(net, "w1", PLAIN_PORT), sink(net, PLAIN_PORT)
        ctl.Add(0.0, gradient(0, 0, 0, kind=7), wire.pcn_tos(start=True, threshold=10))
        for i in range(30):
            tx.Add(0.001 + 1e-6 * i, bytes(1472), wire.ECN_ECT0)
        net.run(1.0)
        ce = [t & 3 == wire.ECN_CE for t in rx.tos]
        counters = net.switches["s1"].counters()
    finally:
        net.close()
    assert len(ce) == 30 and not any(ce)    # back at the normal threshold of 40
    assert counters["pcn_starts"] == 1 and counters["pcn_arrivals"] == 1


def test_serial_tcp_rounds_overlap_a_workers_next_push_with_the_later_pulls(incast):
    push = 100_000
    outs = {}
    for serial in (False, True):
        net = incast(bottleneck_pps=None, workers=4)
        outs[serial] = run_tcp_rounds(net, "ps", ["w1", "w2", "w3", "w4"], push, push, rounds=5,
                                      limit_s=5.0, serial=serial)
        net.close()            # one simulation at a time in a process
    together, serial = outs[False], outs[True]
    assert together.complete and serial.complete
    assert len(serial.push_ends) == 5 and all(s < p < e for s, p, e in
                                              zip(serial.starts, serial.push_ends, serial.ends))
    # a barrier: round k + 1 starts once round k's last pull is in; serial: before that
    assert all(nxt >= end for nxt, end in zip(together.starts[1:], together.ends))
    assert all(nxt < end for nxt, end in zip(serial.starts[1:], serial.ends))
    # (which finishes sooner is not asserted: at Linux's RTO_min a few incast timeouts decide
    # these tiny rounds, and which ones hit depends on the process's earlier simulations)


def test_tcp_rounds_complete(incast):
    net = incast(bottleneck_pps=None)
    push = 100_000
    out = run_tcp_rounds(net, "ps", ["w1", "w2"], push, push, rounds=5, limit_s=5.0)
    assert out.complete
    wire_time = 2 * 2 * push * 8 / 1e9       # both pushes, then both pulls, through one 1 Gb/s port
    assert all(e - s >= wire_time for s, e in zip(out.starts, out.ends))
    assert out.switches["s2"]["queues"]      # the data went through the simulated switches
