"""Opening a send session: CPU microseconds per `SendSession` opened on each transport core
(hosts/transport/core.py), per session and per chunk, both cores in the same run.

Opening a session takes every chunk's magnitude class and marking, the first pass's order and
the DATA frames (ChunkPlan.split and PyFrames on the Python core; native/mag_classes.cpp,
native/send_order.cpp and native/send_frames.cpp on the native one) and the session's
per-chunk state. Plans: `benchmarks/agent_cost.py`'s (ltp_incast's MLP, 8320 + 8256 + 650
float32 cut in 360: 49 chunks) and a worker's push of `benchmarks/ns3_sim.py`'s comparison
round (1,000,000 float32 in one layer: 2,778 chunks); ltp_incast's gradlane flags; gradients
drawn with `--seed`. Sans-IO port, no socket: the session's opening alone (process_time, so
other processes' load does not count; the gradients' generation is outside it).
Run: .venv/bin/python benchmarks/session_setup.py [--repeat 3] [--seed 7]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from benchmarks.agent_cost import CHUNK_ELEMS, LAYERS, _config  # noqa: E402
from hosts import wire  # noqa: E402
from hosts.transport import core as transport_core  # noqa: E402
from hosts.transport.bounds import LossBudget  # noqa: E402
from hosts.transport.chunking import ChunkPlan  # noqa: E402
from hosts.transport.port import Port  # noqa: E402
from hosts.transport.sender import SendSession  # noqa: E402

PLANS = (("agent_cost (3 layers)", LAYERS, 400), ("ns3_sim round (1 M)", [1_000_000], 10))


def per_session_us(sizes: list[int], sessions: int, core: str, seed: int) -> float:
    """CPU microseconds per session opened on `core` over `sessions` sessions of one gradient."""
    config, plan = _config(), ChunkPlan(sizes, CHUNK_ELEMS)
    rng = np.random.default_rng(seed)
    layers = [rng.normal(0, 0.01, n).astype(np.float32) for n in sizes]
    port = Port(config.job_id, 0, time.monotonic)
    budget = LossBudget.of(config.bounds.push, plan, config.bounds.scope)
    critical = config.bounds.critical_layers(pull=False)

    def one() -> SendSession:
        return SendSession(port, ("127.0.0.1", 9), wire.PS_RANK, plan, layers, 1, pull=False,
                           options=config.send, critical_layers=critical, budget=budget, core=core)

    one()   # warm: imports, caches
    t0 = time.process_time()
    for _ in range(sessions):
        one()
    return (time.process_time() - t0) / sessions * 1e6


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")
    cores = ["python"] + (["native"] if transport_core.native_available() else [])
    if len(cores) == 1:
        print(f"(the native core is not built: {transport_core.NATIVE_ERROR}; the Python core only)")
    print(f"{'plan':<24}{'chunks':>8}{'core':>8}{'us/session':>12}{'us/chunk':>10}   runs (us/session)")
    for name, sizes, sessions in PLANS:
        chunks = ChunkPlan(sizes, CHUNK_ELEMS).total_chunks
        runs: dict[str, list[float]] = {c: [] for c in cores}
        for _ in range(args.repeat):      # interleaved: both cores meet the same load
            for core in cores:
                runs[core].append(per_session_us(sizes, sessions, core, args.seed))
        for core in cores:
            med = statistics.median(runs[core])
            print(f"{name:<24}{chunks:>8}{core:>8}{med:>12,.0f}{med / chunks:>10.2f}   "
                  + ", ".join(f"{v:,.0f}" for v in runs[core]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
