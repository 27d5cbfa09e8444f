"""The topology description contract (docs/contracts.md), read and validated by one module:
JSON round trip of what topo writes, queries, and one test per consistency rule."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from controller.errors import ConfigError, TopologyError
from controller.topology import Topology
from support.controller_topologies import diamond
from topo.topologies import build_topology


def incast() -> dict:
    return build_topology("incast").to_dict()


def test_round_trip_through_json(tmp_path):
    topo = build_topology("leafspine")
    path = topo.save(tmp_path / "sub" / "t.json")
    loaded = Topology.load(path)
    assert loaded == topo
    assert loaded.to_dict() == topo.to_dict() == json.loads(path.read_text())


def test_contract_keys():
    data = incast()
    assert set(data["hosts"]["w1"]) == {"ip", "prefix_len", "mac", "gateway", "switch", "switch_port", "role"}
    assert set(data["switches"]["s1"]) == {"device_id", "grpc_addr", "thrift_port", "cpu_port", "priority_queues",
                                           "router_mac", "queue_depth", "queue_rate_pps", "log"}
    trunk = next(link for link in data["links"] if (link["a"], link["b"]) == ("s1", "s2"))
    assert trunk["a_queue_rate_pps"] == 1000.0 and "b_queue_rate_pps" not in trunk
    assert set(trunk) == {"a", "b", "a_port", "b_port", "bw_mbps", "delay_ms", "loss_pct", "impairment",
                          "a_queue_rate_pps"}


def test_defaults_of_optional_keys():
    topo = Topology.from_dict(diamond())
    assert topo.hosts["h1"].role == "worker"
    s1 = topo.switches["s1"]
    assert (s1.cpu_port, s1.priority_queues, s1.log, s1.grpc_port) == (255, 8, None, 59991)
    assert topo.links[0].impairment == "none" and topo.links[0].delay_ms == 0
    assert Topology.from_dict({"name": "empty"}).switches == {}


def test_queries():
    topo = build_topology("incast")
    assert topo.hosts_with_role("ps") == ["ps"]
    assert topo.hosts_with_role("worker") == ["w1", "w2", "w3"]
    ports = topo.ports("s1")
    assert ports[1] == "w1" and ports[max(ports)] == "s2"
    assert topo.switch_neighbors("s1") == [(max(ports), "s2")]
    trunk = topo.switch_links("s2")[-1]
    assert trunk.end("s1") == (max(ports), 1000.0) and trunk.peer("s1") == "s2"
    assert str(topo.hosts["w1"].network) == "10.0.1.0/24"


def test_mac_addresses_are_read_in_lower_case():
    doc = diamond()
    doc["hosts"]["h1"]["mac"] = "08:00:00:00:01:AA"
    doc["switches"]["s1"]["router_mac"] = "00:00:0A:00:01:FE"
    topo = Topology.from_dict(doc)
    assert (topo.hosts["h1"].mac, topo.switches["s1"].router_mac) == ("08:00:00:00:01:aa", "00:00:0a:00:01:fe")


def _set(path: str, value):
    """A mutation of the diamond document: set the value at `a.b.c` (or `links[3].x`)."""
    def mutate(doc: dict) -> None:
        *parents, last = path.replace("[", ".").replace("]", "").split(".")
        node = doc
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        node[last] = value
    return mutate


def _delete(path: str):
    def mutate(doc: dict) -> None:
        *parents, last = path.split(".")
        node = doc
        for part in parents:
            node = node[part]
        del node[last]
    return mutate


RULES = [
    # document shape and types
    (lambda d: d.pop("name"), "t.json: name: missing"),
    (_set("colour", "red"), "t.json: colour: unknown key"),
    (_set("hosts", []), "t.json: hosts: expected a JSON object"),
    (_set("links", {}), "t.json: links: expected a list"),
    (_delete("hosts.h1.mac"), "t.json: hosts.h1.mac: missing"),
    (_set("hosts.h1.colour", "red"), "t.json: hosts.h1.colour: unknown key"),
    (_set("hosts.h1.switch_port", "1"), "t.json: hosts.h1.switch_port: expected an integer, got '1'"),
    (_set("hosts.h1.switch_port", True), "t.json: hosts.h1.switch_port: expected an integer, got True"),
    (_set("hosts.h1.prefix_len", 33), "t.json: hosts.h1.prefix_len: 33 is not in 0..32"),
    (_set("switches.s1.queue_rate_pps", "fast"), "t.json: switches.s1.queue_rate_pps: expected a number"),
    (_delete("switches.s2.router_mac"), "t.json: switches.s2.router_mac: missing"),
    (_set("links[0].a_port", 1.5), "t.json: links[0].a_port: expected an integer"),
    # names
    (lambda d: d["hosts"].update(BAD=d["hosts"].pop("h1")), "hosts.BAD: bad name"),
    (lambda d: d["hosts"].update(s1=d["hosts"].pop("h1")), "hosts.s1: the name is also a switch's"),
    # hosts
    (_set("hosts.h1.role", "boss"), "hosts.h1.role: 'boss' is not a role"),
    (_set("hosts.h1.ip", "10.0.1.300"), "hosts.h1.ip: "),
    (_set("hosts.h1.gateway", "10.9.9.9"), "hosts.h1.gateway: 10.9.9.9 is outside 10.0.1.0/24"),
    (_set("hosts.h3.ip", "10.0.1.1"), "hosts.h3.ip: 10.0.1.1 is used twice (also hosts.h1)"),
    (_set("hosts.h3.mac", "08:00:00:00:01:01"), "hosts.h3.mac: 08:00:00:00:01:01 is used twice"),
    (_set("hosts.h1.mac", "08:00:00:00:01"), "hosts.h1.mac: '08:00:00:00:01' is not a MAC address"),
    (_set("hosts.h1.switch", "s9"), "hosts.h1.switch: unknown switch 's9'"),
    (_set("hosts.h1.switch_port", 7), "hosts.h1: needs exactly one link, to s1 port 7"),
    # switches
    (_set("switches.s2.device_id", 1), "switches.s2.device_id: 1 is used twice (also switches.s1)"),
    (_set("switches.s2.thrift_port", 59091), "switches.s2.thrift_port: TCP port 59091 is used twice"),
    (_set("switches.s2.grpc_addr", "127.0.0.1:59091"), "switches.s2.grpc_addr: TCP port 59091 is used twice"),
    (_set("switches.s2.grpc_addr", "localhost"), "switches.s2.grpc_addr: 'localhost' is not HOST:PORT"),
    (_set("switches.s2.thrift_port", 70000), "switches.s2.thrift_port: TCP port 70000 is not in 1..65535"),
    (_set("switches.s1.router_mac", "router"), "switches.s1.router_mac: 'router' is not a MAC address"),
    (_set("switches.s1.priority_queues", 9), "switches.s1.priority_queues: 9 is not in 1..8"),
    (_set("switches.s1.cpu_port", 512), "switches.s1.cpu_port: 512 is not a P4 port in 1..511"),
    (_set("switches.s1.queue_depth", 0), "switches.s1.queue_depth: 0 is not a depth >= 1"),
    (_set("switches.s1.queue_rate_pps", 0), "switches.s1.queue_rate_pps: 0.0 is not a rate > 0"),
    # links
    (_set("links[3].a_port", 255), "links[3].a_port: switch s1 needs a port in 1..254 (below its cpu_port), got 255"),
    (_set("links[3].a_port", 0), "links[3].a_port: switch s1 needs a port in 1..254"),
    (_set("links[3].a_port", None), "links[3].a_port: switch s1 needs a port in 1..254 (below its cpu_port), got None"),
    (_set("links[4].a_port", 2), "links[4].a_port: switch s1 port 2 is used by links[3] too"),
    (_set("links[0].a_port", 3), "links[0].a_port: host end h1 takes no port"),
    (_set("links[0].a_queue_rate_pps", 10), "links[0].a_queue_rate_pps: host end h1 has no queues"),
    (_set("links[6].b_queue_rate_pps", -5), "links[6].b_queue_rate_pps: -5.0 is not a rate > 0"),
    (_set("links[6].b_byte_rate", 0), "links[6].b_byte_rate: 0.0 is not a rate > 0 in bytes/s"),
    (_set("links[0].a_byte_rate", 1e6), "links[0].a_byte_rate: host end h1 has no queues"),
    (lambda d: d["links"].append({"a": "h1", "b": "zz"}), "links[7].b: unknown node 'zz'"),
    (lambda d: d["links"].append({"a": "s1", "a_port": 9, "b": "s1", "b_port": 10}), "links[7]: both ends are s1"),
    (_set("links[0].impairment", "magic"), "links[0].impairment: 'magic' (choose from netem, switch, none)"),
    (_set("links[0].delay_ms", -1), "links[0].delay_ms: -1.0 is below 0"),
    (_set("links[0].loss_pct", 150), "links[0].loss_pct: 150.0 is not in 0..100"),
    (_set("links[0].bw_mbps", 0), "links[0].bw_mbps: 0.0 is not a bandwidth > 0"),
]


@pytest.mark.parametrize("mutate, message", RULES)
def test_each_rule_rejects_with_one_line_naming_the_key(mutate, message):
    doc = diamond()
    Topology.from_dict(doc, "t.json")  # the unchanged document is valid
    mutate(doc)
    with pytest.raises(TopologyError) as info:
        Topology.from_dict(doc, "t.json")
    assert message in str(info.value)
    assert str(info.value).startswith("t.json: ") and "\n" not in str(info.value)


def test_errors_are_config_errors_for_the_controller():
    assert issubclass(TopologyError, ConfigError)


def test_load_reports_unreadable_and_non_json(tmp_path):
    with pytest.raises(TopologyError, match=r"cannot read topology .*missing.json: No such file"):
        Topology.load(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    with pytest.raises(TopologyError, match=r"bad.json: not JSON \(.* at line 1\)"):
        Topology.load(bad)
    bad.write_bytes(b"\xff\xfe")
    with pytest.raises(TopologyError, match="bad.json: not JSON"):
        Topology.load(bad)
    bad.write_text("[]")
    with pytest.raises(TopologyError, match="bad.json: expected a JSON object"):
        Topology.load(bad)


def test_reader_needs_only_the_standard_library():
    code = ("import sys; before = set(sys.modules); import controller.topology; "
            "print(sorted({m.split('.')[0] for m in set(sys.modules) - before} "
            "- set(sys.stdlib_module_names)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['controller']"
