"""Topology description: JSON round trip and the consistency checks (docs/contracts.md)."""
import json

import pytest

from topo.description import Topology
from topo.errors import DescriptionError
from topo.topologies import build_topology


def _incast_dict():
    return build_topology("incast").to_dict()


def test_round_trip_through_json(tmp_path):
    topo = build_topology("leafspine")
    path = topo.save(tmp_path / "sub" / "t.json")
    loaded = Topology.load(path)
    assert loaded.to_dict() == topo.to_dict()
    assert json.loads(path.read_text())["name"] == "leafspine"


def test_contract_keys_present():
    data = _incast_dict()
    host = data["hosts"]["w1"]
    assert set(host) == {"ip", "prefix_len", "mac", "gateway", "switch", "switch_port", "role"}
    switch = data["switches"]["s1"]
    for key in ("device_id", "grpc_addr", "thrift_port", "cpu_port", "priority_queues",
                "router_mac", "queue_depth", "queue_rate_pps", "log"):
        assert key in switch
    trunk = [link for link in data["links"] if link["a"] == "s1" and link["b"] == "s2"][0]
    assert trunk["a_queue_rate_pps"] == 1000.0 and "b_queue_rate_pps" not in trunk
    assert trunk["impairment"] in ("netem", "switch", "none")


@pytest.mark.parametrize("mutate, needle", [
    (lambda d: d["hosts"]["w1"].update(role="boss"), "role 'boss'"),
    (lambda d: d["hosts"]["w1"].update(gateway="10.9.9.9"), "outside"),
    (lambda d: d["hosts"]["w2"].update(ip=d["hosts"]["w1"]["ip"]), "used twice"),
    (lambda d: d["hosts"]["w1"].update(switch="s9"), "unknown switch"),
    (lambda d: d["switches"]["s2"].update(device_id=1), "device_id 1 used twice"),
    (lambda d: d["switches"]["s2"].update(thrift_port=d["switches"]["s1"]["thrift_port"]), "used twice"),
    (lambda d: d["switches"]["s1"].update(priority_queues=9), "priority_queues"),
    (lambda d: d["links"][0].update(b_port=2), "port 2 used by two links"),
    (lambda d: d["links"][-1].update(impairment="magic"), "impairment 'magic'"),
    (lambda d: d["links"][-1].update(loss_pct=150), "loss_pct"),
    (lambda d: d["links"].append({"a": "w1", "b": "zz", "b_port": 9}), "unknown node 'zz'"),
    (lambda d: d["hosts"].update(BAD=d["hosts"].pop("w1")), "bad node name"),
    (lambda d: d.pop("name"), "bad topology description"),
    (lambda d: d["hosts"]["w1"].update(colour="red"), "bad topology description"),
])
def test_inconsistent_descriptions_rejected(mutate, needle):
    data = _incast_dict()
    mutate(data)
    with pytest.raises(DescriptionError) as info:
        Topology.from_dict(data)
    assert needle in str(info.value)


def test_load_reports_unreadable_and_non_json(tmp_path):
    with pytest.raises(DescriptionError, match="cannot read"):
        Topology.load(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    with pytest.raises(DescriptionError, match="not JSON"):
        Topology.load(bad)


def test_queries():
    topo = build_topology("incast")
    assert topo.hosts_with_role("ps") == ["ps"]
    assert topo.hosts_with_role("worker") == ["w1", "w2", "w3"]
    ports = topo.ports("s1")
    assert ports[1] == "w1" and ports[max(ports)] == "s2"
