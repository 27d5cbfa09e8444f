"""Packets/s through the `p4target switch` process on veth, and the latency it adds.

Two network namespaces are wired to the switch (root namespace) by veth; a third pair of
namespaces is wired directly by one veth pair as the baseline. For each path: a burst of
frames sent as fast as Python can (delivered packets/s), then paced probes carrying their
send time (one-way latency p50/p99, same host clock). Needs root.
Run: .venv/bin/python benchmarks/switch_throughput.py [--burst N] [--probes N] [--rate PPS]
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import queue
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass

from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from p4target.engine.sample_programs import l3_router

CLONE_NEWNET = 0x40000000
MARK = 40405
GRADLANE_ROUTES = (
    "act_prof_create_member GradIngress.ecmp_selector GradIngress.set_nhop 00:00:00:00:01:fe 00:00:00:00:01:aa 1\n"
    "act_prof_create_member GradIngress.ecmp_selector GradIngress.set_nhop 00:00:00:00:02:fe 00:00:00:00:02:bb 2\n"
    "table_indirect_add GradIngress.ipv4_lpm 10.0.1.0/24 => 0\n"
    "table_indirect_add GradIngress.ipv4_lpm 10.0.2.0/24 => 1\n")
L3_ROUTES = ("table_add MyIngress.ipv4_lpm MyIngress.ipv4_forward 10.0.1.0/24 => 00:00:00:00:01:01 1\n"
             "table_add MyIngress.ipv4_lpm MyIngress.ipv4_forward 10.0.2.0/24 => 00:00:00:00:02:02 2\n")


@dataclass
class Result:
    label: str
    sent: int
    delivered: int
    pps: float
    p50_us: float
    p99_us: float


def sh(*args: str, check: bool = True) -> None:
    subprocess.run(list(args), check=check, capture_output=True)


def ns_socket(ns: str, iface: str) -> socket.socket:
    """Raw socket bound to `iface` inside namespace `ns`, opened from a thread that entered it."""
    box: queue.Queue = queue.Queue()

    def run() -> None:
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            fd = os.open(f"/run/netns/{ns}", os.O_RDONLY)
            try:
                if libc.setns(fd, CLONE_NEWNET) != 0:
                    raise OSError(ctypes.get_errno(), f"setns {ns}")
            finally:
                os.close(fd)
            s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
            s.bind((iface, 3))
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
            box.put(s)
        except Exception as exc:
            box.put(exc)

    t = threading.Thread(target=run)
    t.start()
    t.join()
    value = box.get()
    if isinstance(value, Exception):
        raise value
    return value


class Net:
    """Namespaces and veth links for one run; `close()` deletes them all."""

    def __init__(self, tag: str) -> None:
        self.namespaces: list[str] = []
        self.root_links: list[str] = []
        self.tag = tag

    def namespace(self, name: str) -> str:
        ns = f"glb{self.tag}{name}"
        sh("ip", "netns", "add", ns)
        self.namespaces.append(ns)
        sh("ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", check=False)
        return ns

    def to_root(self, ns: str, root_iface: str) -> None:
        """veth: `eth0` in `ns` <-> `root_iface` in the root namespace."""
        sh("ip", "link", "add", root_iface, "type", "veth", "peer", "name", "eth0", "netns", ns)
        self.root_links.append(root_iface)
        sh("sysctl", "-qw", f"net.ipv6.conf.{root_iface}.disable_ipv6=1", check=False)
        sh("ip", "link", "set", root_iface, "up")
        sh("ip", "-n", ns, "link", "set", "eth0", "up")

    def direct(self, ns_a: str, ns_b: str) -> None:
        """veth: `eth0` in `ns_a` <-> `eth0` in `ns_b`."""
        tmp_a, tmp_b = f"glb{self.tag}x", f"glb{self.tag}y"
        sh("ip", "link", "add", tmp_a, "type", "veth", "peer", "name", tmp_b)
        sh("ip", "link", "set", tmp_a, "netns", ns_a, "name", "eth0")
        sh("ip", "link", "set", tmp_b, "netns", ns_b, "name", "eth0")
        sh("ip", "-n", ns_a, "link", "set", "eth0", "up")
        sh("ip", "-n", ns_b, "link", "set", "eth0", "up")

    def close(self) -> None:
        for link in self.root_links:
            sh("ip", "link", "del", link, check=False)
        for ns in self.namespaces:
            sh("ip", "netns", "del", ns, check=False)


def frame(seq: int, stamp_ns: int) -> bytes:
    return bytes(Ether(src="00:00:00:00:01:aa", dst="00:00:00:00:00:fe") /
                 IP(src="10.0.1.1", dst="10.0.2.2", ttl=32) / UDP(sport=MARK, dport=MARK) /
                 (struct.pack("!IQ", seq, stamp_ns) + bytes(50)))


def _parse(data: bytes) -> tuple[int, int] | None:
    # Ether(14) + IPv4 without options(20) + UDP(8): our probes only
    if len(data) < 54 or data[12:14] != b"\x08\x00" or data[36:38] != MARK.to_bytes(2, "big"):
        return None
    return struct.unpack("!IQ", data[42:54])


def measure(label: str, tx: socket.socket, rx: socket.socket, burst: int, probes: int, rate: float) -> Result:
    arrivals: list[tuple[int, int, int]] = []  # (seq, sent_ns, arrived_ns)
    stop = threading.Event()

    def receiver() -> None:
        rx.settimeout(0.2)
        while not stop.is_set():
            try:
                data = rx.recv(65536)
            except socket.timeout:
                continue
            now = time.monotonic_ns()
            parsed = _parse(data)
            if parsed is not None:
                arrivals.append((parsed[0], parsed[1], now))

    thread = threading.Thread(target=receiver, daemon=True)
    thread.start()
    try:
        # 1) burst: as fast as the sender goes; delivered rate at the far end
        template = frame(0, 0)
        for seq in range(burst):
            tx.send(template[:42] + struct.pack("!IQ", seq, 0) + template[54:])
        _wait_quiet(arrivals, 1.0)
        got = [a for a in arrivals if a[1] == 0]
        span = (got[-1][2] - got[0][2]) / 1e9 if len(got) > 1 else 0.0
        pps = (len(got) - 1) / span if span > 0 else 0.0
        # 2) paced probes for latency
        arrivals.clear()
        gap = 1.0 / rate
        next_at = time.monotonic()
        head, tail = template[:42], template[54:]
        for seq in range(probes):
            next_at += gap
            delay = next_at - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            tx.send(head + struct.pack("!IQ", seq, time.monotonic_ns()) + tail)
        _wait_quiet(arrivals, 0.5)
    finally:
        stop.set()
        thread.join()
    lat = sorted((arr - sent) / 1e3 for _, sent, arr in arrivals if sent)
    p50 = lat[len(lat) // 2] if lat else float("nan")
    p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))] if lat else float("nan")
    return Result(label, burst, len(got), pps, p50, p99)


def _wait_quiet(arrivals: list, quiet: float) -> None:
    last, since = -1, time.monotonic()
    while time.monotonic() - since < quiet:
        time.sleep(0.05)
        if len(arrivals) != last:
            last, since = len(arrivals), time.monotonic()


def start_switch(args: list[str]) -> tuple[subprocess.Popen, int]:
    proc = subprocess.Popen([sys.executable, "-m", "p4target", "switch", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    port = None
    for line in proc.stdout:
        if "Thrift server listening on port" in line:
            port = int(line.rsplit(" ", 1)[1])
        if "switch ready" in line:
            break
    if port is None:
        proc.kill()
        raise RuntimeError(f"switch did not start: {proc.stderr.read()}")
    return proc, port


def stop_switch(proc: subprocess.Popen) -> None:
    os.kill(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def switch_row(net: Net, label: str, json_path: str, commands: str, args: argparse.Namespace,
               queue_depth: int = 1024, extra: tuple[str, ...] = ()) -> Result:
    """Measure one program in the switch process between two fresh namespaces."""
    name = label.split()[0][:3]
    h1, h2 = net.namespace(f"{name}1"), net.namespace(f"{name}2")
    s1, s2 = f"glb{net.tag}{name}s1", f"glb{net.tag}{name}s2"
    net.to_root(h1, s1)
    net.to_root(h2, s2)
    proc, thrift = start_switch(["-i", f"1@{s1}", "-i", f"2@{s2}", "--thrift-port", "0", json_path, "--",
                                 "--grpc-server-addr", f"127.0.0.1:{free_port()}", *extra])
    try:
        cli = os.path.join(os.path.dirname(sys.executable), "simple_switch_CLI")
        subprocess.run([cli, "--thrift-port", str(thrift)], input=commands + f"set_queue_depth {queue_depth}\n",
                       capture_output=True, text=True, check=True, timeout=60)
        tx, rx = ns_socket(h1, "eth0"), ns_socket(h2, "eth0")
        try:
            return measure(label, tx, rx, args.burst, args.probes, args.rate)
        finally:
            tx.close()
            rx.close()
    finally:
        stop_switch(proc)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--burst", type=int, default=20000, help="frames in the throughput burst")
    ap.add_argument("--probes", type=int, default=1000, help="paced latency probes")
    ap.add_argument("--rate", type=float, default=1000.0, help="probe rate (packets/s)")
    args = ap.parse_args()
    # the receiver thread must get the GIL at once when a probe arrives (default switch: 5 ms)
    sys.setswitchinterval(1e-4)
    if os.geteuid() != 0:
        print("switch_throughput: skipped (needs root for network namespaces and raw sockets)")
        return 0
    net = Net(str(os.getpid() % 100000))
    rows: list[Result] = []
    try:
        d1, d2 = net.namespace("d1"), net.namespace("d2")
        net.direct(d1, d2)
        tx, rx = ns_socket(d1, "eth0"), ns_socket(d2, "eth0")
        try:
            rows.append(measure("direct veth (baseline)", tx, rx, args.burst, args.probes, args.rate))
        finally:
            tx.close()
            rx.close()
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "l3_router.json")
            with open(path, "w") as f:
                json.dump(l3_router(), f)
            rows.append(switch_row(net, "l3 switch (l3_router, LPM)", path, L3_ROUTES, args))
            from p4target.compiler import compile_file
            root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
            grad = os.path.join(tmp, "gradlane.json")
            with open(grad, "w") as f:
                json.dump(compile_file(os.path.join(root, "p4src", "gradlane.p4"),
                                       include_dirs=[os.path.join(root, "p4src")]).bmv2_json, f)
            rows.append(switch_row(net, "gradlane switch (p4src)", grad, GRADLANE_ROUTES, args,
                                   extra=("--priority-queues", "8")))
    finally:
        net.close()
    print(f"{'path':<30}{'burst':>7}{'delivered':>10}{'pps':>10}{'p50 us':>10}{'p99 us':>10}")
    for r in rows:
        print(f"{r.label:<30}{r.sent:>7}{r.delivered:>10}{r.pps:>10.0f}{r.p50_us:>10.1f}{r.p99_us:>10.1f}")
    base = rows[0]
    for r in rows[1:]:
        print(f"added by {r.label}: p50 {r.p50_us - base.p50_us:.1f} us, p99 {r.p99_us - base.p99_us:.1f} us "
              f"(probes at {args.rate:g} pps)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
