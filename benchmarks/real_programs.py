"""Compile and load times of six large real-world P4 programs (ONOS fabric, OMEC UP4, SONiC PINS
fabric/middleblock/WBB, SONiC DASH; p4c's `testdata/p4_16_samples`), on both compilers and both
switches, in seconds (median of --repeat runs):

  compile: our compiler (in this process: parse, back end, P4Info) beside p4c's `p4c-bm2-ss`;
  load:    the embedded switch's loader (`Engine(json)`) and the real `simple_switch` (start until
           its Thrift port answers), each with our JSON and with p4c's.

The sources come from a p4c checkout (`--p4c-src`, else $P4C_SRC, else /opt/p4ref/src/p4c);
without one only p4c's committed JSON (tests/differential/fixtures) is loaded on the embedded
switch. p4c and simple_switch are timed when installed (/opt/p4ref, or $P4REF_PREFIX).

Run: .venv/bin/python benchmarks/real_programs.py [--repeat R] [--p4c-src DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from p4target.compiler import compile_file  # noqa: E402
from p4target.engine import Engine  # noqa: E402

FIXTURES = ROOT / "tests" / "differential" / "fixtures"
PREFIX = Path(os.environ.get("P4REF_PREFIX", "/opt/p4ref"))


def _median(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def simple_switch_load(json_path: str) -> float | None:
    """Seconds from starting simple_switch on the JSON until its Thrift port answers; None if it
    exits first (the JSON was refused)."""
    port = _free_port()
    env = dict(os.environ, LD_LIBRARY_PATH=str(PREFIX / "lib"))
    start = time.perf_counter()
    proc = subprocess.Popen([str(PREFIX / "bin" / "simple_switch"), "--thrift-port", str(port), json_path],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while proc.poll() is None:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.05):
                    return time.perf_counter() - start
            except OSError:
                time.sleep(0.005)
            if time.perf_counter() - start > 60:
                return None
        return None
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--p4c-src", type=Path, default=Path(os.environ.get("P4C_SRC", "/opt/p4ref/src/p4c")))
    args = ap.parse_args()
    manifest = json.loads((FIXTURES / "manifest.json").read_text())
    samples = args.p4c_src if (args.p4c_src / "testdata").is_dir() else None
    p4c = PREFIX / "bin" / "p4c-bm2-ss"
    have_p4c = p4c.exists()
    have_bmv2 = (PREFIX / "bin" / "simple_switch").exists()
    if samples is None:
        print(f"no p4c checkout at {args.p4c_src} (--p4c-src): only p4c's committed JSON is loaded")
    print(f"{'program':<28} {'compile ours':>12} {'compile p4c':>12} {'load emb ours':>13} {'load emb p4c':>12} "
          f"{'load bmv2 ours':>14} {'load bmv2 p4c':>13}")

    def cell(v: float | None) -> str:
        return "-" if v is None else f"{v:.2f}"

    with tempfile.TemporaryDirectory() as tmp:
        for name, entry in sorted(manifest["programs"].items()):
            p4c_json_path = str(FIXTURES / entry["json"])
            p4c_json = json.loads(Path(p4c_json_path).read_text())
            row: dict[str, float | None] = dict.fromkeys(
                ("compile_ours", "compile_p4c", "emb_ours", "emb_p4c", "bmv2_ours", "bmv2_p4c"))
            row["emb_p4c"] = _median(lambda: Engine(p4c_json), args.repeat)
            if have_bmv2:
                row["bmv2_p4c"] = statistics.median(
                    [t for t in (simple_switch_load(p4c_json_path) for _ in range(args.repeat)) if t is not None] or [float("nan")])
            if samples is not None:
                source = samples / entry["source"]
                compiled = {}

                def ours() -> None:
                    result = compile_file(str(source), include_dirs=(str(source.parent),))
                    _ = result.p4info  # built on first use; p4c's time includes its P4Info
                    compiled["json"] = result.bmv2_json
                row["compile_ours"] = _median(ours, args.repeat)
                ours_path = os.path.join(tmp, f"{name}.ours.json")
                Path(ours_path).write_text(json.dumps(compiled["json"]))
                row["emb_ours"] = _median(lambda: Engine(compiled["json"]), args.repeat)
                if have_bmv2:
                    row["bmv2_ours"] = statistics.median(
                        [t for t in (simple_switch_load(ours_path) for _ in range(args.repeat)) if t is not None] or [float("nan")])
                if have_p4c:
                    out = os.path.join(tmp, f"{name}.p4c.json")
                    row["compile_p4c"] = _median(lambda: subprocess.run(
                        [str(p4c), "--arch", "v1model", "--p4v", "16", "-o", out,
                         "--p4runtime-files", out + ".p4info.txtpb", str(source)],
                        check=True, capture_output=True, env=dict(os.environ, LD_LIBRARY_PATH=str(PREFIX / "lib"))),
                        args.repeat)
            print(f"{name:<28} {cell(row['compile_ours']):>12} {cell(row['compile_p4c']):>12} "
                  f"{cell(row['emb_ours']):>13} {cell(row['emb_p4c']):>12} {cell(row['bmv2_ours']):>14} "
                  f"{cell(row['bmv2_p4c']):>13}", flush=True)
    print("seconds, median of", args.repeat, "runs; '-': tool or source not available")


if __name__ == "__main__":
    main()
