"""Network programming against four embedded switches wired together in process (a diamond):
ARP answers, routed delivery with MAC rewrite and TTL, per-packet spraying of gradient DATA over
both equal-cost paths, one path per ordinary flow.

Skipped only while the compiler back end or the switch's P4Runtime server is missing.
"""
from __future__ import annotations

import json
import struct
import threading
import time

import pytest

from p4target.compiler import compile_file
from p4target.switch.p4runtime import start_p4runtime_server
from p4target.switch.target import SwitchTarget

from controller import p4names as N
from controller.manager import NetworkController
from controller.topology import Topology

from support.controller_topologies import diamond


def mac(text: str) -> bytes:
    return bytes(int(x, 16) for x in text.split(":"))


def ip(text: str) -> bytes:
    return bytes(int(x) for x in text.split("."))


def checksum(data: bytes) -> int:
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def udp_frame(src_mac: str, dst_mac: str, src: str, dst: str, sport: int, dport: int,
              payload: bytes, ident: int = 0) -> bytes:
    udp = struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload
    hdr = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), ident, 0, 64, 17, 0, ip(src), ip(dst))
    hdr = hdr[:10] + struct.pack("!H", checksum(hdr)) + hdr[12:]
    return mac(dst_mac) + mac(src_mac) + b"\x08\x00" + hdr + udp


def gradient(seq: int) -> bytes:
    return struct.pack("!BBHHHIBBHIIHHI", 0x10, 0, 1, 0, 2, 1, 0, 0, 16, seq, seq * 4, 0, 0, 0) + bytes(16)


class Fabric:
    """Embedded switches of a topology, their links as function calls, hosts as inboxes."""

    def __init__(self, doc: dict) -> None:
        self.doc = doc
        self.inbox: dict[str, list[bytes]] = {h: [] for h in doc["hosts"]}
        self.transit: dict[tuple[str, int], int] = {}
        self.lock = threading.Lock()
        self.peer: dict[tuple[str, int], tuple[str, int | None]] = {}
        for link in doc["links"]:
            self.peer[(link["a"], link.get("a_port"))] = (link["b"], link.get("b_port"))
            self.peer[(link["b"], link.get("b_port"))] = (link["a"], link.get("a_port"))
        self.targets: dict[str, SwitchTarget] = {}
        self.servers = {}
        for name, sw in doc["switches"].items():
            self.targets[name] = SwitchTarget(device_id=sw["device_id"], cpu_port=255, priority_queues=8,
                                              queue_depth=256, transmit=self._sender(name))
            self.servers[name] = start_p4runtime_server(self.targets[name], "127.0.0.1:0")
            sw["grpc_addr"] = f"127.0.0.1:{self.servers[name].port}"

    def _sender(self, switch: str):
        def send(port: int, frame: bytes) -> None:
            node, node_port = self.peer[(switch, port)]
            with self.lock:
                self.transit[(switch, port)] = self.transit.get((switch, port), 0) + 1
            if node in self.targets:
                self.targets[node].receive(node_port, frame)
            else:
                with self.lock:
                    self.inbox[node].append(frame)
        return send

    def send_from(self, host: str, frame: bytes) -> None:
        h = self.doc["hosts"][host]
        self.targets[h["switch"]].receive(h["switch_port"], frame)

    def wait_inbox(self, host: str, count: int, timeout: float = 15.0) -> list[bytes]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and len(self.inbox[host]) < count:
            time.sleep(0.05)
        return list(self.inbox[host])

    def stop(self) -> None:
        for s in self.servers.values():
            s.stop()
        for t in self.targets.values():
            t.stop()


@pytest.fixture
def fabric():
    doc = diamond(name="fwd")
    fab = Fabric(doc)
    program = compile_file("p4src/gradlane.p4", include_dirs=["p4src"])
    ctl = NetworkController(Topology.from_dict(doc), program.p4info, json.dumps(program.bmv2_json).encode(),
                            set_queues=False, timeout=5.0)
    try:
        assert ctl.start() == {n: None for n in doc["switches"]}
        yield fab, ctl
    finally:
        ctl.stop()
        fab.stop()


def test_switch_answers_arp_for_gateway_and_subnet_hosts(fabric):
    fab, _ = fabric
    h1 = fab.doc["hosts"]["h1"]
    for target_ip in ("10.0.1.254", "10.0.1.3"):
        arp = struct.pack("!HHBBH6s4s6s4s", 1, 0x0800, 6, 4, 1, mac(h1["mac"]), ip(h1["ip"]),
                          bytes(6), ip(target_ip))
        fab.send_from("h1", b"\xff" * 6 + mac(h1["mac"]) + b"\x08\x06" + arp)
    replies = fab.wait_inbox("h1", 2)
    assert len(replies) == 2
    router = mac(fab.doc["switches"]["s1"]["router_mac"])
    for reply, asked in zip(replies, ("10.0.1.254", "10.0.1.3")):
        assert reply[0:6] == mac(h1["mac"]) and reply[6:12] == router
        oper, sha, spa, tha, tpa = struct.unpack("!6xH6s4s6s4s", reply[14:42])
        assert (oper, sha, spa, tha, tpa) == (2, router, ip(asked), mac(h1["mac"]), ip(h1["ip"]))


def test_routed_delivery_both_ways(fabric):
    fab, _ = fabric
    h1, h2 = fab.doc["hosts"]["h1"], fab.doc["hosts"]["h2"]
    s1_mac, s4_mac = fab.doc["switches"]["s1"]["router_mac"], fab.doc["switches"]["s4"]["router_mac"]
    fab.send_from("h1", udp_frame(h1["mac"], s1_mac, h1["ip"], h2["ip"], 5000, 6000, b"hello"))
    fab.send_from("h2", udp_frame(h2["mac"], s4_mac, h2["ip"], h1["ip"], 6000, 5000, b"back"))
    got2, got1 = fab.wait_inbox("h2", 1), fab.wait_inbox("h1", 1)
    assert len(got2) == 1 and len(got1) == 1
    frame = got2[0]
    assert frame[0:6] == mac(h2["mac"]) and frame[6:12] == mac(s4_mac)
    assert frame[22] == 64 - 3                      # three routers on the way
    assert frame.endswith(b"hello") and got1[0].endswith(b"back")


def test_gradients_are_sprayed_flows_are_pinned(fabric):
    fab, ctl = fabric
    h1, h2 = fab.doc["hosts"]["h1"], fab.doc["hosts"]["h2"]
    s1_mac = fab.doc["switches"]["s1"]["router_mac"]
    n = 200
    for seq in range(n):
        fab.send_from("h1", udp_frame(h1["mac"], s1_mac, h1["ip"], h2["ip"], 40000, 19527,
                                      gradient(seq), ident=seq))
    assert len(fab.wait_inbox("h2", n)) == n
    via = (fab.transit.get(("s1", 2), 0), fab.transit.get(("s1", 3), 0))
    assert sum(via) == n and min(via) >= n // 5     # both equal-cost paths carry gradients
    tx = {(q["port"], q["prio"]): q["tx"] for q in ctl.stats("s1")["s1"]["queues"]}
    assert tx[(2, 0)] + tx[(3, 0)] == n              # the switch's own counters agree
    fab.transit.clear()
    fab.inbox["h2"].clear()
    for seq in range(50):                            # one ordinary UDP flow: one path only
        fab.send_from("h1", udp_frame(h1["mac"], s1_mac, h1["ip"], h2["ip"], 5555, 7777, b"x", ident=seq))
    assert len(fab.wait_inbox("h2", 50)) == 50
    via = (fab.transit.get(("s1", 2), 0), fab.transit.get(("s1", 3), 0))
    assert sorted(via) == [0, 50]
    assert N.ROUTE_TABLE in {e.table for e in ctl.installed("s1", [N.ROUTE_TABLE])}
