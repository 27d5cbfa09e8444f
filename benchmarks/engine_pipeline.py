"""Packets/s and per-packet latency of the synchronous engine on a simple L3 program.

Run: .venv/bin/python benchmarks/engine_pipeline.py [--packets N] [--entries N]
"""
from __future__ import annotations

import argparse
import statistics
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
    print(f"{'program':<22}{'entries':>8}{'packets':>9}{'pps':>11}{'median us':>11}{'p99 us':>9}")
    print(f"{'l3_router (lpm)':<22}{args.entries:>8}{args.packets:>9}{args.packets / elapsed:>11.0f}"
          f"{statistics.median(lat) / 1e3:>11.1f}{lat[int(len(lat) * 0.99)] / 1e3:>9.1f}")


if __name__ == "__main__":
    main()
