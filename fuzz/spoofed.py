"""Packets with the source address of a bound peer: the PS gets mutated gradient packets from
"its worker" and the worker from "its PS", sent through a raw socket (root; loopback only).

The address check cannot tell these from the real peer's: without --packet-mac a stream of
them stalls a job (a spoofed STOP ends a push the PS never got; this fuzzer found it). So the
job runs with --packet-mac, and it must finish its rounds without a traceback, a hang or a
crash, every spoofed packet dropped for its MAC. Without root the fuzzer reports itself
skipped.
"""
from __future__ import annotations

import os
import random
import socket
import struct
import time

from fuzz.job import JOB, LoopbackJob
from fuzz.ps import packet
from fuzz.report import Report
from hosts import wire

LOOPBACK = socket.inet_aton("127.0.0.1")


def udp_datagram(src_port: int, dst_port: int, payload: bytes) -> bytes:
    """An IPv4/UDP datagram 127.0.0.1:src_port -> 127.0.0.1:dst_port (the kernel fills the IP
    checksum and length; UDP checksum 0: none)."""
    udp = struct.pack("!HHHH", src_port, dst_port, 8 + len(payload), 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, 64, socket.IPPROTO_UDP, 0,
                     LOOPBACK, LOOPBACK)
    return ip + udp


def run(count: int, seconds: float, seed: int = 1) -> Report:
    """``count`` spoofed packets, half each way, while a real job runs."""
    rng = random.Random(seed)
    report = Report("spoofed")
    start = time.monotonic()
    if os.geteuid() != 0:
        report.outcomes["skipped: needs root for a raw socket"] += 1
        return report
    job = LoopbackJob("--packet-mac")
    try:
        job.start_ps()
        time.sleep(1.0)
        job.start_worker()
        with socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW) as raw:
            sent = 0
            while sent < count and time.monotonic() - start < seconds and job.running():
                if rng.random() < 0.5:      # "from the worker" to the PS
                    data = udp_datagram(job.worker_port, job.ps_port, packet(rng, JOB, rank=0))
                else:                       # "from the PS" to the worker
                    data = udp_datagram(job.ps_port, job.worker_port,
                                        packet(rng, JOB, rank=wire.PS_RANK))
                if len(data) <= 65535:
                    raw.sendto(data, ("127.0.0.1", 0))
                    sent += 1
                if sent % 50 == 0:
                    time.sleep(0.005)
        report.tried += sent
        job.finish(report)
        for name in ("ps", "worker"):
            report.outcomes[f"dropped by the {name} (MAC)"] += job.counters(name).get("drop_bad_mac", 0)
    finally:
        job.close()
    report.seconds = time.monotonic() - start
    return report
