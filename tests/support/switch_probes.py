"""Probe frames for switch-process tests on real links: an L3 router program file, its routes
(via the Thrift CLI), UDP probes carrying a sequence number and send time, and their receipt."""
import json
import socket
import struct
import time

from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from p4target.engine.sample_programs import l3_router

MARK_PORT = 40404


def program_file(tmp_path) -> str:
    path = tmp_path / "l3.json"
    path.write_text(json.dumps(l3_router()))
    return str(path)


def routes(sw) -> None:
    out = sw.cli("table_add MyIngress.ipv4_lpm MyIngress.ipv4_forward 10.0.1.0/24 => 00:00:00:00:01:01 1\n"
                 "table_add MyIngress.ipv4_lpm MyIngress.ipv4_forward 10.0.2.0/24 => 00:00:00:00:02:02 2\n")
    assert out.count("Entry has been added") == 2


def probe(seq: int, dst: str = "10.0.2.2", src: str = "10.0.1.1") -> bytes:
    payload = struct.pack("!Id", seq, time.monotonic())
    return bytes(Ether(src="00:00:00:00:01:aa", dst="00:00:00:00:00:fe") / IP(src=src, dst=dst, ttl=32) /
                 UDP(sport=MARK_PORT, dport=MARK_PORT) / payload)


def is_probe(data: bytes) -> bool:
    pkt = Ether(data)
    return UDP in pkt and pkt[UDP].dport == MARK_PORT


def receive(sock: socket.socket, expected: int, quiet: float = 0.5, limit: float = 20.0) -> list[tuple[float, bytes]]:
    """Probe frames arriving on `sock` (with arrival times) until `expected` arrived or the link
    stays quiet for `quiet` seconds."""
    got = []
    deadline = time.monotonic() + limit
    sock.settimeout(quiet)
    while len(got) < expected and time.monotonic() < deadline:
        try:
            data = sock.recv(65536)
        except socket.timeout:
            break
        if is_probe(data):
            got.append((time.monotonic(), data))
    return got
