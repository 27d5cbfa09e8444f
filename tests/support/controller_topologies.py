"""Topology descriptions for the controller tests."""
from __future__ import annotations


def diamond(addresses: dict[str, str] | None = None, name: str = "diamond") -> dict:
    """h1 - s1 = {s2, s3} = s4 - h2, plus h3 on s1 (same subnet as h1): two equal-cost paths."""
    addresses = addresses or {}
    sw = {}
    for i in range(1, 5):
        sw[f"s{i}"] = {"device_id": i, "grpc_addr": addresses.get(f"s{i}", f"127.0.0.1:{59990 + i}"),
                       "thrift_port": 59090 + i, "router_mac": f"00:00:0a:00:0{i}:fe",
                       "queue_depth": 64, "queue_rate_pps": None}
    return {
        "name": name,
        "hosts": {
            "h1": {"ip": "10.0.1.1", "prefix_len": 24, "mac": "08:00:00:00:01:01",
                   "gateway": "10.0.1.254", "switch": "s1", "switch_port": 1, "role": "worker"},
            "h3": {"ip": "10.0.1.3", "prefix_len": 24, "mac": "08:00:00:00:01:03",
                   "gateway": "10.0.1.254", "switch": "s1", "switch_port": 4, "role": "worker"},
            "h2": {"ip": "10.0.4.2", "prefix_len": 24, "mac": "08:00:00:00:04:02",
                   "gateway": "10.0.4.254", "switch": "s4", "switch_port": 1, "role": "ps"},
        },
        "switches": sw,
        "links": [
            {"a": "h1", "a_port": None, "b": "s1", "b_port": 1},
            {"a": "h3", "a_port": None, "b": "s1", "b_port": 4},
            {"a": "h2", "a_port": None, "b": "s4", "b_port": 1},
            {"a": "s1", "a_port": 2, "b": "s2", "b_port": 1},
            {"a": "s1", "a_port": 3, "b": "s3", "b_port": 1},
            {"a": "s2", "a_port": 2, "b": "s4", "b_port": 2},
            {"a": "s3", "a_port": 2, "b": "s4", "b_port": 3, "b_queue_rate_pps": 500},
        ],
    }

