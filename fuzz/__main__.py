"""`make fuzz`: run the bounded fuzzers one after another and print what each tried and found.

python -m fuzz [--seconds S] [--scale X] [--seed N] [NAME ...]   (names: frames, p4runtime,
policies, gradients, join-first, spoofed, control). Exit status 1 when any fuzzer saw a crash, a hang or a
traceback.
"""
from __future__ import annotations

import argparse
import sys
from typing import Callable

from fuzz.report import Report, print_reports

# name -> (default count, share of the time budget)
DEFAULTS: dict[str, tuple[int, float]] = {
    "frames": (200_000, 0.25), "p4runtime": (20_000, 0.2), "policies": (3_000, 0.2),
    "gradients": (100_000, 0.15), "join-first": (20_000, 0.1), "spoofed": (50_000, 0.1),
    "control": (3_000, 0.15)}


def _runner(name: str) -> Callable[[int, float, int], Report]:
    if name == "frames":
        from fuzz.switch import fuzz_frames
        return fuzz_frames
    if name == "p4runtime":
        from fuzz.switch import fuzz_p4runtime
        return fuzz_p4runtime
    if name == "policies":
        from fuzz.policies import run
        return run
    if name == "join-first":
        from fuzz.join_first import run as run_join_first
        return run_join_first
    if name == "control":
        from fuzz.control_plane import run as run_control
        return run_control
    if name == "spoofed":
        from fuzz.spoofed import run as run_spoofed
        return run_spoofed
    from fuzz.ps import run as run_ps
    return run_ps


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m fuzz", description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", metavar="NAME",
                    help=f"fuzzers to run (default all: {', '.join(DEFAULTS)})")
    ap.add_argument("--seconds", type=float, default=300.0, help="time budget of the whole run")
    ap.add_argument("--scale", type=float, default=1.0, help="multiply every fuzzer's input count")
    ap.add_argument("--seed", type=int, default=1, help="random seed (runs repeat with the same seed)")
    args = ap.parse_args(argv)
    unknown = [n for n in args.names if n not in DEFAULTS]
    if unknown:
        ap.exit(2, f"python -m fuzz: error: unknown fuzzer '{unknown[0]}' "
                   f"(fuzzers: {', '.join(DEFAULTS)})\n")
    if args.seconds <= 0 or args.scale <= 0:
        ap.exit(2, "python -m fuzz: error: --seconds and --scale must be positive\n")
    names = args.names or list(DEFAULTS)
    share = sum(DEFAULTS[n][1] for n in names)
    reports = []
    for name in names:
        count, part = DEFAULTS[name]
        budget = args.seconds * part / share
        print(f"fuzz: {name}: up to {int(count * args.scale)} inputs in {budget:.0f} s", flush=True)
        try:
            reports.append(_runner(name)(int(count * args.scale), budget, args.seed))
        except Exception as exc:  # noqa: BLE001 - a fuzzer that cannot run is reported, not fatal
            failed = Report(name)
            failed.fail("crash", f"fuzzer could not run: {type(exc).__name__}: {exc}")
            reports.append(failed)
    print_reports(reports)
    failures = sum(r.failures for r in reports)
    print(f"fuzz: {sum(r.tried for r in reports)} inputs tried, {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
