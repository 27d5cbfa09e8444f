"""`python -m topo.soak` (`make soak`, not in CI): two training jobs side by side on the incast
bottleneck with background TCP traffic for a long time (30 minutes by default), to show that
nothing grows: every process's resident memory, the switches' table entries and the
controller's state at the start and at the end (and once a minute in between).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from mininet.log import setLogLevel

from topo.errors import TopoError
from topo.pidfile import RunRecord, is_same_process
from topo.session import TWO_JOBS_POLICY, RunConfig, RunSession
from topo.topologies import TopoParams
from topo.training import json_lines

# Jobs run until the soak ends; they are stopped (SIGTERM) then.
ENDLESS_ROUNDS = 10_000_000
WARM_UP_S = 30.0


def rss_kib(pid: int) -> int | None:
    """Resident set size of ``pid`` in KiB (None when it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def sample(session: RunSession) -> dict[str, Any]:
    """RSS of every recorded process, entries per switch, the controller's state sizes."""
    record = RunRecord.load(session.config.log_dir)
    procs = {}
    for p in record.processes if record else []:
        if p.kind == "node-shell" or not is_same_process(p.pid, p.start_time):
            continue
        kib = rss_kib(p.pid)
        if kib is not None:
            procs[f"{p.name} ({p.kind})"] = kib
    entries: dict[str, Any] = {}
    done = session.gradctl("--json", "switches")
    if done.returncode in (0, 3):
        entries = {row["switch"]: row.get("entries") for row in json.loads(done.stdout)}
    jobs = session.gradctl("--json", "jobs")
    state = Path(session.config.log_dir) / f"{session.topo.name}.controller.json"
    return {"t": time.time(), "rss_kib": procs, "entries": entries,
            "state_file_bytes": state.stat().st_size if state.exists() else None,
            "jobs_view_bytes": len(jobs.stdout) if jobs.returncode == 0 else None}


def _rounds(session: RunSession) -> dict[int, int]:
    out = {}
    for job_id, job in session.running.items():
        ps = next(p for p in job.processes.values() if p.name.startswith("ps@"))
        out[job_id] = max((r["round"] for r in json_lines(ps.output()) if r.get("event") == "round"),
                          default=-1) + 1
    return out


def report(first: dict[str, Any], last: dict[str, Any]) -> list[str]:
    """The start and end figures side by side."""
    lines = [f"{'process':<32} {'RSS start':>10} {'RSS end':>10} {'change':>8}"]
    for name in sorted(set(first["rss_kib"]) | set(last["rss_kib"])):
        a, b = first["rss_kib"].get(name), last["rss_kib"].get(name)
        change = "n/a" if a is None or b is None else f"{100 * (b - a) / a:+.1f}%"
        lines.append(f"{name:<32} {_mib(a):>10} {_mib(b):>10} {change:>8}")
    for sw in sorted(set(first["entries"]) | set(last["entries"])):
        lines.append(f"switch {sw} table entries: {first['entries'].get(sw)} -> {last['entries'].get(sw)}")
    lines.append(f"controller state file: {first['state_file_bytes']} -> {last['state_file_bytes']} bytes; "
                 f"gradctl jobs view: {first['jobs_view_bytes']} -> {last['jobs_view_bytes']} bytes")
    return lines


def _mib(kib: int | None) -> str:
    return "n/a" if kib is None else f"{kib / 1024:.1f} MiB"


def run_soak(args: argparse.Namespace) -> int:
    """Run the soak; 0 when both jobs ran to the end, else 1."""
    cfg = RunConfig(topo_name="incast", build_dir=args.build, log_dir=args.log_dir,
                    params=TopoParams(workers=3, background=2, bottleneck_pps=2000, jobs=2),
                    policy=TWO_JOBS_POLICY, rounds=ENDLESS_ROUNDS)
    with RunSession(cfg) as session:
        print("background: " + "; ".join(session.start_background(args.flows, args.minutes * 60 + 120)),
              flush=True)
        jobs = [session.start_job(rounds=ENDLESS_ROUNDS, workers=3) for _ in range(2)]
        print(f"jobs {jobs} started; warming up {WARM_UP_S:g} s", flush=True)
        end = time.monotonic() + args.minutes * 60
        time.sleep(min(WARM_UP_S, args.minutes * 30))
        first = sample(session)
        print(f"start: {json.dumps(first)}", flush=True)
        while time.monotonic() < end:
            time.sleep(min(60.0, max(0.0, end - time.monotonic())))
            if any(job.finished() for job in session.running.values()):
                break
            now = sample(session)
            total = sum(now["rss_kib"].values())
            print(f"{time.strftime('%H:%M:%S')} rounds {_rounds(session)}; total RSS "
                  f"{total / 1024:.1f} MiB; entries {now['entries']}; state "
                  f"{now['state_file_bytes']} bytes", flush=True)
        last = sample(session)
        rounds = _rounds(session)
        alive = all(not job.finished() for job in session.running.values())
        print("\n".join(report(first, last)))
        print(f"soak of {args.minutes:g} min: rounds per job {rounds}; "
              f"{'both jobs ran to the end' if alive else 'a job ENDED EARLY (see its log)'}")
        return 0 if alive else 1


def main(argv: list[str] | None = None) -> int:
    """Entry point of `python -m topo.soak`."""
    p = argparse.ArgumentParser(prog="python -m topo.soak", description=__doc__.splitlines()[0])
    p.add_argument("--minutes", type=float, default=30.0, help="how long (default 30)")
    p.add_argument("--flows", type=int, default=2, help="background TCP flows per sender (default 2)")
    p.add_argument("--build", default="build", help="folder with gradlane.json and its P4Info")
    p.add_argument("--log-dir", default="logs", help="logs (default logs)")
    args = p.parse_args(argv)
    if args.minutes <= 0 or args.flows < 1:
        print("topo.soak: error: need --minutes > 0 and --flows >= 1", file=sys.stderr)
        return 2
    setLogLevel("warning")
    try:
        return run_soak(args)
    except TopoError as exc:
        print(f"topo.soak: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
