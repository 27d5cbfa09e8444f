"""End-to-end compile time of the embedded compiler on our own p4src/ programs and the language
corpus: parse, back end (BMv2 JSON), P4Info, and loading the JSON into the engine, in ms.

Run: .venv/bin/python benchmarks/compiler_backend.py [--repeat R]
"""
from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from p4target.compiler import CompiledProgram
from p4target.compiler.parser import parse_program
from p4target.compiler.v1switch import lower_program
from p4target.engine import Engine

ROOT = Path(__file__).resolve().parents[1]


def stages(path: Path, include: list[str]) -> dict[str, float]:
    """Milliseconds per stage for one compilation."""
    t0 = time.perf_counter()
    program = parse_program(str(path), include)
    t1 = time.perf_counter()
    ctx = lower_program(program, path.name)
    compiled = CompiledProgram(ctx)
    t2 = time.perf_counter()
    _ = compiled.p4info
    t3 = time.perf_counter()
    Engine(compiled.bmv2_json, priority_queues=8)
    t4 = time.perf_counter()
    return {"parse": (t1 - t0) * 1e3, "backend": (t2 - t1) * 1e3, "p4info": (t3 - t2) * 1e3,
            "engine_load": (t4 - t3) * 1e3}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    programs = [(ROOT / "p4src" / "gradlane.p4", [str(ROOT / "p4src")])]
    corpus = sorted((ROOT / "tests" / "conformance" / "language").glob("*.p4"))
    programs += [(p, [str(p.parent)]) for p in corpus if p.with_suffix(".stf").exists()]
    print(f"{'program':<28} {'parse ms':>9} {'backend ms':>11} {'p4info ms':>10} {'engine ms':>10} {'total ms':>9}")
    totals = []
    for path, include in programs:
        runs = [stages(path, include) for _ in range(args.repeat)]
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        total = sum(med.values())
        totals.append(total)
        if path.parent.name == "p4src" or len(totals) <= 6:
            print(f"{path.name:<28} {med['parse']:9.1f} {med['backend']:11.1f} {med['p4info']:10.1f} "
                  f"{med['engine_load']:10.1f} {total:9.1f}")
    print(f"language corpus: {len(totals) - 1} programs, median total {statistics.median(totals[1:]):.1f} ms, "
          f"max {max(totals[1:]):.1f} ms; gradlane.p4 / corpus median = {totals[0] / statistics.median(totals[1:]):.1f}x")


if __name__ == "__main__":
    main()
