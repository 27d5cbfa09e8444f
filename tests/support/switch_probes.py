"""Probe frames for switch-process tests on real links: an L3 router program file, its routes
(via the Thrift CLI), UDP probes carrying a sequence number and send time, and their receipt."""
import json
import socket
import struct
import threading
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


class Stream:
    """Probes sent h1 -> h2 every `period` s from one thread; arrivals recorded by another as
    (arrival time, send time)."""

    def __init__(self, s1: socket.socket, s2: socket.socket, period: float) -> None:
        self.s1, self.s2, self.period = s1, s2, period
        self.sent: list[float] = []
        self.arrived: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._send), threading.Thread(target=self._receive)]

    def __enter__(self) -> "Stream":
        for t in self._threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(timeout=10)

    def _send(self) -> None:
        seq = 0
        next_at = time.monotonic()
        while not self._stop.is_set():
            self.sent.append(time.monotonic())
            self.s1.send(probe(seq))
            seq += 1
            next_at += self.period
            self._stop.wait(max(0.0, next_at - time.monotonic()))

    def _receive(self) -> None:
        self.s2.settimeout(0.2)
        while not self._stop.is_set():
            try:
                data = self.s2.recv(65536)
            except socket.timeout:
                continue
            if is_probe(data):
                _, sent_at = struct.unpack("!Id", bytes(Ether(data)[UDP].payload)[:12])
                self.arrived.append((time.monotonic(), sent_at))

    def delivered(self, sent_from: float, sent_to: float) -> tuple[int, int]:
        """(probes sent in [from, to), how many of them arrived)."""
        sent = sum(sent_from <= t < sent_to for t in self.sent)
        return sent, sum(sent_from <= t < sent_to for _, t in self.arrived)

    def arrivals(self, start: float, end: float) -> int:
        return sum(start <= t < end for t, _ in self.arrived)
