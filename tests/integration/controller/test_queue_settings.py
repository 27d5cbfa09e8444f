"""Queue depth and rate at start-up through simple_switch_CLI against the embedded switch's Thrift port.

Skipped only while the compiler or the switch's Thrift/P4Runtime servers are missing.
"""
from __future__ import annotations

import json

import pytest

from p4target.compiler import compile_file
from p4target.switch.p4runtime import start_p4runtime_server
from p4target.switch.target import SwitchTarget
from p4target.switch.thrift.server import ThriftServer

from controller import errors
from controller.manager import NetworkController
from controller.thrift import run_commands
from controller.topology import Topology


@pytest.fixture
def switch():
    target = SwitchTarget(device_id=1, cpu_port=255, priority_queues=8, queue_depth=64,
                          transmit=lambda p, f: None)
    grpc_server = start_p4runtime_server(target, "127.0.0.1:0")
    thrift = ThriftServer(target, 0, host="127.0.0.1")
    thrift.start()
    yield target, grpc_server.port, thrift.port
    thrift.stop()
    grpc_server.stop()
    target.stop()


def test_queue_settings_reach_the_switch(switch):
    target, grpc_port, thrift_port = switch
    program = compile_file("p4src/gradlane.p4", include_dirs=["p4src"])
    topo = Topology.from_dict({
        "name": "q",
        "hosts": {"h1": {"ip": "10.0.1.1", "prefix_len": 24, "mac": "08:00:00:00:01:01",
                         "gateway": "10.0.1.254", "switch": "s1", "switch_port": 1},
                  "h2": {"ip": "10.0.1.2", "prefix_len": 24, "mac": "08:00:00:00:01:02",
                         "gateway": "10.0.1.254", "switch": "s1", "switch_port": 2}},
        "switches": {"s1": {"device_id": 1, "grpc_addr": f"127.0.0.1:{grpc_port}",
                            "thrift_port": thrift_port, "router_mac": "00:00:0a:00:01:fe",
                            "queue_depth": 30, "queue_rate_pps": 800}},
        "links": [{"a": "h1", "b": "s1", "b_port": 1},
                  {"a": "h2", "b": "s1", "b_port": 2, "b_queue_rate_pps": 250}],
    })
    ctl = NetworkController(topo, program.p4info, json.dumps(program.bmv2_json).encode(), timeout=5.0)
    try:
        assert ctl.start() == {"s1": None}
        assert ctl.switches["s1"].queues_set
        tm = target.engine.tm
        assert (tm.default_depth, tm.default_pps) == (30, 800)
        assert [q.pps for q in tm._port(2)] == [250] * 8
        assert [q.pps for q in tm._port(1)] == [800] * 8
    finally:
        ctl.stop()


def test_thrift_errors_are_one_line(switch):
    _, _, thrift_port = switch
    with pytest.raises(errors.ThriftError, match=r"^s1: Thrift port \d+: .*"):
        run_commands(thrift_port, ["set_queue_rate not-a-number"], "s1")
    with pytest.raises(errors.ThriftError, match="connection refused"):
        run_commands(1, ["set_queue_depth 10"], "s1", timeout=10)
