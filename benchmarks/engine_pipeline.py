"""Packets/s and per-packet latency of the synchronous engine on a simple L3 program.

Run: .venv/bin/python benchmarks/engine_pipeline.py [--packets N] [--entries N]
"""
from __future__ import annotations

import argparse
import statistics
import threading
import time

from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from p4target.engine import Engine, Lpm
from p4target.engine.sample_programs import l3_router


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--packets", type=int, default=20000)
    ap.add_argument("--entries", type=int, default=16, help="LPM entries installed")
    args = ap.parse_args()
    eng = Engine(l3_router())
    for i in range(args.entries):
        eng.table_add("MyIngress.ipv4_lpm", [Lpm(0x0A000000 | (i << 8), 24)], "MyIngress.ipv4_forward",
                      [0x020000000000 + i, 1 + i % 4])
    frames = [bytes(Ether() / IP(dst=f"10.0.{i % args.entries}.7") / UDP() / (b"x" * 64))
              for i in range(256)]
    for f in frames:  # warm-up
        eng.process(0, f)
    lat = []
    start = time.perf_counter()
    clock = time.perf_counter_ns
    for i in range(args.packets):
        t0 = clock()
        eng.process(0, frames[i & 255])
        lat.append(clock() - t0)
    elapsed = time.perf_counter() - start
    lat.sort()
    print(f"{'mode':<28}{'entries':>8}{'packets':>9}{'pps':>11}{'median us':>11}{'p99 us':>9}")
    print(f"{'sync process() l3 lpm':<28}{args.entries:>8}{args.packets:>9}{args.packets / elapsed:>11.0f}"
          f"{statistics.median(lat) / 1e3:>11.1f}{lat[int(len(lat) * 0.99)] / 1e3:>9.1f}")
    live_pps, live_lat = _live(eng, frames, args.packets)
    print(f"{'live receive() to transmit':<28}{args.entries:>8}{args.packets:>9}{live_pps:>11.0f}"
          f"{statistics.median(live_lat):>11.1f}{live_lat[int(len(live_lat) * 0.99)]:>9.1f}")


def _live(eng: Engine, frames: list[bytes], count: int) -> tuple[float, list[float]]:
    """Live mode: receive() runs ingress and egress and transmits (unshaped port: no queueing);
    latency = receive() call to transmit callback."""
    sent_at: dict[bytes, float] = {}
    lat: list[float] = []
    done = threading.Event()
    got = [0]

    def transmit(port: int, data: bytes) -> None:
        got[0] += 1
        t0 = sent_at.pop(data[-8:], None)
        if t0 is not None:
            lat.append((time.perf_counter() - t0) * 1e6)
        if got[0] >= count:
            done.set()

    eng.set_queue_depth(1 << 20)
    eng.start(transmit)
    start = time.perf_counter()
    try:
        for i in range(count):
            frame = frames[i & 255][:-8] + i.to_bytes(8, "big")
            sent_at[frame[-8:]] = time.perf_counter()
            eng.receive(0, frame)
        done.wait(60)
    finally:
        eng.stop()
    elapsed = time.perf_counter() - start
    lat.sort()
    return got[0] / elapsed, lat or [0.0]


if __name__ == "__main__":
    main()
