"""Per-lookup cost of LPM and ternary tables with 10 and with 10,000 entries (their ratio).

LPM: one 32-bit key, prefixes of lengths /8../32, random addresses looked up. Ternary: an ACL
shape (32-bit address under a few prefix masks, a 16-bit port exact or wildcard), distinct
priorities, looked up with keys that miss or hit the lowest-priority entries (the worst case
for a linear scan). Also the whole L3 router pipeline (`Engine.process`) with 10 and 10,000
routes. Each cost is the best of `--rounds` timed loops; printed beside the previous release.
Run: .venv/bin/python benchmarks/table_scaling.py [--lookups N] [--record-baseline]
"""
from __future__ import annotations

import argparse
import os
import random
import sys
import time

import _baseline

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from scapy.layers.inet import IP, UDP  # noqa: E402
from scapy.layers.l2 import Ether  # noqa: E402

from p4target.engine import Engine, Lpm  # noqa: E402
from p4target.engine.match import Ternary  # noqa: E402
from p4target.engine.sample_programs import l3_router  # noqa: E402
from p4target.engine.tables import ActionSpec, KeyField, Table  # noqa: E402

SMALL, LARGE = 10, 10_000
ACTIONS = {"a": ActionSpec("a", 1, [("x", 8)])}


def _best_ns(fn, keys: list, rounds: int) -> float:
    """Best nanoseconds per call of fn(key) over `rounds` loops through `keys`."""
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter_ns()
        for k in keys:
            fn(k)
        best = min(best, (time.perf_counter_ns() - start) / len(keys))
    return best


def lpm_table(n: int, rng: random.Random) -> Table:
    t = Table("lpm", [KeyField("lpm", "dst", 32)], ACTIONS, 0)
    seen = set()
    while len(t.entries) < n:
        plen = rng.choice((8, 16, 20, 24, 24, 24, 28, 32))
        value = rng.getrandbits(32) & (((1 << plen) - 1) << (32 - plen))
        if (value, plen) in seen:
            continue
        seen.add((value, plen))
        t.add([Lpm(value, plen)], "a", [1])
    return t


def ternary_table(n: int, rng: random.Random) -> tuple[Table, list[tuple]]:
    """An ACL-shaped table; returns it and keys that hit its lowest-priority entries or miss."""
    t = Table("acl", [KeyField("ternary", "src", 32), KeyField("ternary", "port", 16)], ACTIONS, 0)
    masks = [0xFFFFFF00, 0xFFFF0000, 0xFFFFFFFF, 0xFF000000]
    entries = []
    seen = set()
    while len(t.entries) < n:
        mask = rng.choice(masks)
        value = rng.getrandbits(32) & mask
        port, pmask = (rng.getrandbits(16), 0xFFFF) if rng.random() < 0.7 else (0, 0)
        if (value, mask, port, pmask) in seen:
            continue
        seen.add((value, mask, port, pmask))
        t.add([Ternary(value, mask), Ternary(port, pmask)], "a", [1], priority=len(t.entries) + 1)
        entries.append((value, port))
    keys = [entries[-1 - (i % max(1, n // 10))] for i in range(256)]  # the last-added tenth
    keys += [(rng.getrandbits(32), rng.getrandbits(16)) for _ in range(256)]  # mostly misses
    rng.shuffle(keys)
    return t, keys


def pipeline(n: int, lookups: int, rounds: int) -> float:
    program = l3_router()
    for table in program["pipelines"][0]["tables"]:
        table["max_size"] = max(table.get("max_size", 0), 2 * LARGE)
    eng = Engine(program)
    for i in range(n):
        eng.table_add("MyIngress.ipv4_lpm", [Lpm((10 << 24) | (i << 8), 24)], "MyIngress.ipv4_forward",
                      [0x020000000000 + i, 1 + i % 4])
    frames = [bytes(Ether() / IP(dst=f"10.{(i * 7919 % n) >> 8 & 255}.{(i * 7919 % n) & 255}.7") / UDP() /
                    bytes(64)) for i in range(256)]
    keys = [frames[i % 256] for i in range(lookups)]
    return _best_ns(lambda f: eng.process(1, f), keys, rounds)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lookups", type=int, default=20000, help="lookups per timed loop")
    ap.add_argument("--rounds", type=int, default=5, help="timed loops (best counts)")
    ap.add_argument("--record-baseline", action="store_true", help="write these figures to baseline.json")
    args = ap.parse_args()
    rng = random.Random(7)
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}")
    cost: dict[tuple[str, int], float] = {}
    for n in (SMALL, LARGE):
        t = lpm_table(n, rng)
        keys = [(rng.getrandbits(32),) for _ in range(args.lookups)]
        cost[("lpm", n)] = _best_ns(t.lookup, keys, args.rounds)
        t, tkeys = ternary_table(n, rng)
        keys = [tkeys[i % len(tkeys)] for i in range(min(args.lookups, 4000))]
        cost[("ternary", n)] = _best_ns(t.lookup, keys, args.rounds if n == SMALL else min(args.rounds, 2))
        cost[("pipeline", n)] = pipeline(n, min(args.lookups, 5000), args.rounds)
    print(f"{'lookup':<28}{f'{SMALL} entries ns':>16}{f'{LARGE} entries ns':>19}{'ratio':>8}")
    labels = {"lpm": "LPM table lookup", "ternary": "ternary table lookup",
              "pipeline": "L3 router process() (LPM)"}
    figures = {}
    for kind, label in labels.items():
        ratio = cost[(kind, LARGE)] / cost[(kind, SMALL)]
        figures[f"{kind}_10k_over_10"] = ratio
        print(f"{label:<28}{cost[(kind, SMALL)]:>16.0f}{cost[(kind, LARGE)]:>19.0f}{ratio:>8.2f}")
    print()
    for kind, label in labels.items():
        print(f"{label}, cost of 10k entries / 10 entries: "
              f"{_baseline.beside(f'{kind}_10k_over_10', figures[f'{kind}_10k_over_10'], 'x', '{:.2f}')}")
    if args.record_baseline:
        _baseline.record(figures)
        print(f"recorded in {_baseline.PATH}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
