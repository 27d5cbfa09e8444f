"""`python -m topo.load_sweep` (`make load`, not in CI): how many concurrent training jobs of how
many workers one machine holds. Each cell of the grid (jobs x workers per job) is a fresh incast
network with the two-jobs test's bottleneck and policy, extended to N jobs (odd jobs: the loose
bound, Early Close by telemetry, PCN announced; even jobs: the tight bound, the adaptive
deadline), running the same short job side by side. Per cell it records rounds completed, rounds
closed by a deadline, bound violations, round times, the CPU the switch and the hosts' agents
used and the load average. A row (one worker count) stops growing at its knee: the first cell
where a job failed, closed more than ``--deadline-share`` of its rounds by a deadline (or without a
worker left behind as absent) or had more than that share of rounds with a counted violation, or where a bound was broken outright (a
switch class over its bound, a round closed by the bound delivering less than it).
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from topo import proc_stats
from topo.errors import TopoError
from topo.pidfile import RunRecord
from topo.summary import round_records, rounds_completed
from topo.topologies import TopoParams
from topo.training import TrainingResult

# The two-jobs test's network and policy (tests/topology/test_two_jobs.py).
BOTTLENECK_PPS = 2000.0
QUEUE_DEPTH = 256
BOUNDS = {1: (0.10, 0.04), 0: (0.02, 0.01)}   # job id % 2 -> (push, pull)
DEFAULT_JOBS = (1, 2, 3, 4)
DEFAULT_WORKERS = (2, 4, 8)
DEFAULT_ROUNDS = 60
DEFAULT_SHARE = 0.2


def job_bounds(job: int) -> tuple[float, float]:
    """(push, pull) bound of job ``job``: odd jobs the loose pair, even jobs the tight one."""
    return BOUNDS[job % 2]


def policy_document(jobs: int) -> dict[str, Any]:
    """The two-jobs test's policy for ``jobs`` jobs (job ids 1..jobs)."""
    out = []
    for job in range(1, jobs + 1):
        push, pull = job_bounds(job)
        odd = job % 2 == 1
        out.append({"job": job, "name": f"job{job}",
                    "pcn": {"threshold": 10, "adapt": odd, "floor": 5, "ceiling": 40},
                    "early_close": "telemetry" if odd else "adaptive",
                    "layers": [{"range": [0, 65535], "loss_bound": push, "pull_bound": pull,
                                "priority": 4, "drop_eligible": True, "drop_threshold": 4}]})
    return {"version": 1, "jobs": out}


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``values`` by linear interpolation; nan when empty."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    pos = q * (len(ordered) - 1)
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def job_figures(job: int, result: TrainingResult, classes: list[dict[str, Any]]) -> dict[str, Any]:
    """One job's figures: rounds, deadline closes, violations, round times, switch classes."""
    push, _ = job_bounds(job)
    recs = round_records(result)
    times = [float(r["time_s"]) for r in recs if isinstance(r.get("time_s"), (int, float))]
    deadline = sum(1 for r in recs if "deadline" in (r.get("closed_by") or []))
    # a worker left behind (absent, or joining again): the round closed without its push, or
    # ran while the PS counted it absent
    absent = sum(1 for r in recs if {"absent", "rejoined"} & set(r.get("closed_by") or []) or r.get("absent"))
    violated_rounds = sum(1 for r in recs if sum(r.get("violations") or []) > 0)
    # closed by the bound yet delivering less than it: a broken bound, not a counted violation
    under = sum(1 for r in recs if not {"deadline", "absent", "rejoined"} & set(r.get("closed_by") or [])
                and isinstance(r.get("delivered_tensor_min"), (int, float))
                and r["delivered_tensor_min"] < 1 - push - 1e-6)
    mine = [c for c in classes if c.get("job") == job]
    return {"job": job, "ok": result.ok, "timed_out": result.timed_out,
            "exits": {name: code for name, code in result.exit_codes.items() if code != 0}, "rounds": rounds_completed(result),
            "deadline_rounds": deadline, "absent_rounds": absent, "violated_rounds": violated_rounds,
            "violations": sum(sum(r.get("violations") or []) for r in recs),
            "under_bound_rounds": under,
            "switch_out_of_bound": sum(1 for c in mine if not c.get("within_bound", True)),
            "switch_dropped": sum(int(c.get("dropped") or 0) for c in mine),
            "switch_seen": sum(int(c.get("seen") or 0) for c in mine),
            "round_s": times, "round_t": [float(r["t"]) for r in recs if isinstance(r.get("t"), (int, float))],
            "elapsed_s": round(result.elapsed_s, 2)}


def overlap(figures: list[dict[str, Any]]) -> dict[str, float]:
    """How much the jobs trained side by side (each job trains from its first round's start, its
    end minus its time, to its last round's end): the most jobs training at one moment, and the
    share of all rounds that ended while at least one other job was training (0 for one job)."""
    windows = [(f["round_t"][0] - (f["round_s"][0] if f["round_s"] else 0.0), f["round_t"][-1])
               for f in figures if f["round_t"]]
    edges = sorted([(a, 1) for a, _ in windows] + [(b, -1) for _, b in windows], key=lambda e: (e[0], e[1]))
    most = now = 0
    for _, step in edges:
        now += step
        most = max(most, now)
    ends = [(i, t) for i, f in enumerate(figures) if f["round_t"] for t in f["round_t"]]
    beside = sum(1 for i, t in ends if any(k != i and a <= t <= b for k, (a, b) in enumerate(windows)))
    return {"most_side_by_side": most, "side_by_side_share": round(beside / len(ends), 3) if ends else 0.0}


def cell_reasons(cell: dict[str, Any], rounds: int, share: float) -> list[str]:
    """Why a cell is past the knee (empty when it holds)."""
    out = []
    for j in cell["jobs"]:
        tag = f"job {j['job']}"
        if not j["ok"] or j["rounds"] < rounds:
            exits = ", ".join(f"{name.split('@')[0]} exit {code}" for name, code in (j.get("exits") or {}).items())
            out.append(f"{tag} failed ({j['rounds']}/{rounds} rounds" + (f"; {exits}" if exits else "")
                       + ("; timed out)" if j["timed_out"] else ")"))
        if j["deadline_rounds"] > share * rounds:
            out.append(f"{tag}: {j['deadline_rounds']}/{rounds} rounds closed by deadline")
        if j["absent_rounds"] > share * rounds:
            out.append(f"{tag}: {j['absent_rounds']}/{rounds} rounds closed without a worker (absent)")
        if j["violated_rounds"] > share * rounds:
            out.append(f"{tag}: {j['violated_rounds']}/{rounds} rounds with a counted violation")
        if j["switch_out_of_bound"]:
            out.append(f"{tag}: {j['switch_out_of_bound']} switch class(es) over the bound")
        if j["under_bound_rounds"]:
            out.append(f"{tag}: {j['under_bound_rounds']} bound-closed round(s) under the bound")
    return out


def plan(jobs: list[int], workers: list[int]) -> list[tuple[int, int]]:
    """The cells in run order: row by row (workers ascending), jobs ascending within a row."""
    return [(j, w) for w in sorted(set(workers)) for j in sorted(set(jobs))]


def next_cells(done: dict[tuple[int, int], list[str]], cells: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The cells still to run: a row (workers) stops growing after its first cell past the knee."""
    knee_rows = {w for (j, w), reasons in done.items() if reasons}
    return [(j, w) for (j, w) in cells if (j, w) not in done and w not in knee_rows]


@dataclass
class CpuMeter:
    """CPU seconds of a run's recorded processes (by kind) and of the machine, sampled from
    /proc every ``interval`` s between start() and stop() (a process that exits keeps its last
    sample; the last fraction of an interval of its life may be missed)."""

    log_dir: str
    interval: float = 0.25
    first: dict[int, float] = field(default_factory=dict)
    last: dict[int, float] = field(default_factory=dict)
    kinds: dict[int, str] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def _sample(self) -> None:
        record = RunRecord.load(self.log_dir)
        for p in record.processes if record else []:
            if p.kind not in ("switch", "agent"):
                continue
            cpu = proc_stats.cpu_seconds(p.pid)
            if cpu is None:
                continue
            self.kinds[p.pid] = "switch" if p.kind == "switch" else "hosts"
            self.first.setdefault(p.pid, 0.0 if p.kind == "agent" else cpu)
            self.last[p.pid] = cpu

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def start(self) -> "CpuMeter":
        """Take the first sample (switches count from here; agents from their start)."""
        self.t0 = time.monotonic()
        self.jiffies0 = proc_stats.busy_jiffies()
        self._sample()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> dict[str, float]:
        """{switch_cpu_s, hosts_cpu_s, wall_s, machine_busy_pct}: CPU used since start()."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        wall = time.monotonic() - self.t0
        busy0, total0 = self.jiffies0
        busy1, total1 = proc_stats.busy_jiffies()
        out = {"switch_cpu_s": 0.0, "hosts_cpu_s": 0.0}
        for pid, kind in self.kinds.items():
            out[f"{kind}_cpu_s"] += self.last[pid] - self.first[pid]
        return {**{k: round(v, 2) for k, v in out.items()}, "wall_s": round(wall, 2),
                "machine_busy_pct": round(100.0 * (busy1 - busy0) / max(1, total1 - total0), 1)}


def run_cell(args: argparse.Namespace, jobs: int, workers: int) -> dict[str, Any]:
    """One cell: a fresh network, ``jobs`` jobs of ``workers`` workers started side by side,
    waited for, measured; the network stopped."""
    from topo.session import RunConfig, RunSession  # noqa: PLC0415 (Mininet: only when run)

    log_dir = Path(args.log_dir) / f"j{jobs}w{workers}"
    log_dir.mkdir(parents=True, exist_ok=True)
    policy = log_dir / "policy.json"
    policy.write_text(json.dumps(policy_document(jobs)))
    params = TopoParams(workers=workers, background=0, jobs=jobs, bottleneck_pps=args.bottleneck_pps,
                        queue_depth=QUEUE_DEPTH)
    cfg = RunConfig(topo_name="incast", build_dir=args.build, log_dir=str(log_dir), params=params,
                    policy=str(policy), rounds=args.rounds)
    with RunSession(cfg) as session:
        load_before = os.getloadavg()
        meter = CpuMeter(str(log_dir)).start()
        extra = tuple(args.agent_arg)
        started = [session.start_job(args.rounds, workers, extra_ps=extra,
                                     extra_worker=(*extra, *(("--pcn",) if j % 2 == 1 else ())))
                   for j in range(1, jobs + 1)]
        results = {j: session.finish_job(j, timeout=args.timeout) for j in started}
        cpu = meter.stop()
        load_after = os.getloadavg()
        stats = session.stats() or {}
    classes = [c for st in stats.values() if isinstance(st, dict) and st.get("reachable")
               for c in st.get("classes", [])]
    figures = [job_figures(j, results[j], classes) for j in started]
    times = [t for f in figures for t in f["round_s"]]
    wall = cpu["wall_s"] or 1.0
    return {"jobs_n": jobs, "workers": workers, "rounds": args.rounds, "jobs": figures,
            "round_mean_s": round(statistics.fmean(times), 4) if times else None,
            "round_p90_s": round(percentile(times, 0.9), 4) if times else None,
            **overlap(figures), **cpu, "switch_cpu_pct": round(100 * cpu["switch_cpu_s"] / wall, 1),
            "hosts_cpu_pct": round(100 * cpu["hosts_cpu_s"] / wall, 1),
            "load_before": [round(x, 2) for x in load_before], "load_after": [round(x, 2) for x in load_after]}


def _commit() -> str:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True)
    return done.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "") if done.returncode == 0 else "unknown"


def table(cells: list[dict[str, Any]], share: float) -> list[str]:
    """The summary's table: one line per cell, in run order."""
    lines = ["| jobs x workers | rounds (per job) | deadline closes | rounds w/ violation | violations "
             "| switch out of bound | round mean / p90 s | side by side | switch CPU | hosts CPU | machine busy "
             "| load 1-min before/after | verdict |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in cells:
        js = c["jobs"]
        rounds = "/".join(str(j["rounds"]) for j in js)
        dl = "/".join(str(j["deadline_rounds"]) for j in js)
        vr = "/".join(str(j["violated_rounds"]) for j in js)
        vio = "/".join(str(j["violations"]) for j in js)
        oob = sum(j["switch_out_of_bound"] for j in js)
        reasons = cell_reasons(c, c["rounds"], share)
        lines.append(f"| {c['jobs_n']} x {c['workers']} | {rounds} | {dl} | {vr} | {vio} | {oob} "
                     f"| {c['round_mean_s']} / {c['round_p90_s']} "
                     f"| {c['most_side_by_side']} at once, {c['side_by_side_share']:.0%} of rounds | {c['switch_cpu_s']} s ({c['switch_cpu_pct']} %) "
                     f"| {c['hosts_cpu_s']} s ({c['hosts_cpu_pct']} %) | {c['machine_busy_pct']} % "
                     f"| {c['load_before'][0]} / {c['load_after'][0]} "
                     f"| {'KNEE: ' + '; '.join(reasons) if reasons else 'holds'} |")
    return lines


def write_summary(out: Path, cells: list[dict[str, Any]], meta: dict[str, Any]) -> None:
    """summary.md (the table, the command, seed, commit and load) beside cells.jsonl."""
    share = meta["deadline_share"]
    knees = {}
    for c in cells:
        if cell_reasons(c, c["rounds"], share):
            knees.setdefault(c["workers"], c["jobs_n"])
    rows = sorted({c["workers"] for c in cells})
    knee_lines = [f"- {w} workers per job: " + (f"knee at {knees[w]} job(s)" if w in knees
                  else "no knee within the grid") for w in rows]
    text = ["# Load sweep: concurrent jobs x workers on one machine",
            "",
            f"- command: `{meta['command']}`",
            f"- commit: {meta['commit']}; started {meta['started']}; {meta['cpus']} CPUs; "
            f"switch: {meta['switch']}",
            f"- seed: the agents' default (--seed 1); {meta['rounds']} rounds per job; bottleneck "
            f"{meta['bottleneck_pps']:g} pps, queue depth {QUEUE_DEPTH}; odd jobs push/pull bound "
            f"{BOUNDS[1][0]}/{BOUNDS[1][1]} (telemetry Early Close, PCN), even jobs {BOUNDS[0][0]}/{BOUNDS[0][1]} "
            "(adaptive deadline)" + (f"; agent flags {' '.join(meta['agent_args'])}" if meta.get("agent_args")
                                     else "; no other agent flags (deadline start 500 ms, floor 200 ms)"),
            f"- knee rule: a job failed, more than {share:.0%} of a job's rounds closed by a deadline, or "
            "closed with a worker left behind (absent), or with a counted violation, a switch class over its bound, or a bound-closed round under "
            "its bound",
            f"- load average (1/5/15 min) at the start {meta['load_start']}, at the end {meta['load_end']}",
            "",
            *knee_lines,
            "",
            "Per-job columns list jobs 1..N. Side by side: the most jobs training at one moment "
            "(between their first and last round) and the share of all rounds that ended while "
            "another job was training; the jobs start one after the other (each PS, then its "
            "workers, whose start takes seconds on a loaded machine). CPU is seconds over the cell's jobs (from their start to the "
            "last agent's exit) and its share of one core; machine busy is all CPUs' busy share then.",
            "",
            *table(cells, share), ""]
    (out / "summary.md").write_text("\n".join(text))


def run_sweep(args: argparse.Namespace, command: str) -> int:
    """Run the grid, writing each cell as it ends; 0 when every planned cell ran."""
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    meta = {"command": command, "commit": _commit(), "started": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "cpus": os.cpu_count(), "rounds": args.rounds, "bottleneck_pps": args.bottleneck_pps,
            "deadline_share": args.deadline_share, "agent_args": list(args.agent_arg), "load_start": [round(x, 2) for x in os.getloadavg()],
            "switch": os.environ.get("SWITCH") or "default (embedded unless simple_switch_grpc is on PATH)"}
    cells: list[dict[str, Any]] = []
    done: dict[tuple[int, int], list[str]] = {}
    grid = plan(args.jobs, args.workers)
    with open(out / "cells.jsonl", "w") as sink:
        while True:
            todo = next_cells(done, grid)
            if not todo:
                break
            jobs, workers = todo[0]
            print(f"{time.strftime('%H:%M:%S')} cell {jobs} job(s) x {workers} workers ...", flush=True)
            cell = run_cell(args, jobs, workers)
            cells.append(cell)
            sink.write(json.dumps(cell, sort_keys=True) + "\n")
            sink.flush()
            done[(jobs, workers)] = cell_reasons(cell, args.rounds, args.deadline_share)
            print("  " + table([cell], args.deadline_share)[-1], flush=True)
    meta["load_end"] = [round(x, 2) for x in os.getloadavg()]
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    write_summary(out, cells, meta)
    print(f"summary in {out / 'summary.md'}")
    return 0


def render(folder: Path) -> int:
    """Write FOLDER/summary.md again from its cells.jsonl and meta.json (the side-by-side
    figures recomputed from the rounds' times); 0, or 1 with a one-line error."""
    try:
        cells = [json.loads(line) for line in (folder / "cells.jsonl").read_text().splitlines() if line.strip()]
        meta = json.loads((folder / "meta.json").read_text())
    except (OSError, ValueError) as exc:
        print(f"topo.load_sweep: error: cannot read the sweep in {folder}: {exc}", file=sys.stderr)
        return 1
    for cell in cells:
        cell.update(overlap(cell["jobs"]))
    write_summary(folder, cells, meta)
    print(f"summary in {folder / 'summary.md'}")
    return 0


def _ints(text: str) -> list[int]:
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of integers: {text!r}") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"need integers >= 1: {text!r}")
    return values


def main(argv: list[str] | None = None) -> int:
    """Entry point of `python -m topo.load_sweep`."""
    argv = sys.argv[1:] if argv is None else argv
    p = argparse.ArgumentParser(prog="python -m topo.load_sweep", description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=_ints, default=list(DEFAULT_JOBS), help="concurrent jobs (default 1,2,3,4)")
    p.add_argument("--workers", type=_ints, default=list(DEFAULT_WORKERS), help="workers per job (default 2,4,8)")
    p.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS, help=f"rounds per job (default {DEFAULT_ROUNDS})")
    p.add_argument("--deadline-share", type=float, default=DEFAULT_SHARE,
                   help=f"knee: more than this share of a job's rounds closed by a deadline (default {DEFAULT_SHARE})")
    p.add_argument("--bottleneck-pps", type=float, default=BOTTLENECK_PPS,
                   help=f"bottleneck rate (default {BOTTLENECK_PPS:g}, the two-jobs test's)")
    p.add_argument("--timeout", type=float, default=400.0, help="per job, s (default 400, the test's)")
    p.add_argument("--agent-arg", action="append", default=[], metavar="ARG",
                   help="one more flag for every PS and worker (repeat; e.g. --agent-arg=--deadline-floor-ms "
                        "--agent-arg=1800)")
    p.add_argument("--build", default="build", help="folder with gradlane.json and its P4Info")
    p.add_argument("--log-dir", default="logs/load", help="logs, one folder per cell (default logs/load)")
    p.add_argument("--out", default="logs/load", help="cells.jsonl, meta.json, summary.md (default logs/load)")
    p.add_argument("--render", metavar="FOLDER", help="only write FOLDER/summary.md again from its cells.jsonl")
    try:
        args = p.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    if args.rounds < 1 or not 0 <= args.deadline_share < 1 or args.timeout <= 0 or args.bottleneck_pps <= 0:
        print("topo.load_sweep: error: need --rounds >= 1, 0 <= --deadline-share < 1, --timeout > 0 "
              "and --bottleneck-pps > 0", file=sys.stderr)
        return 2
    if args.render:
        return render(Path(args.render))
    from mininet.log import setLogLevel  # noqa: PLC0415

    setLogLevel("warning")
    try:
        return run_sweep(args, "python -m topo.load_sweep " + " ".join(map(shlex.quote, argv)))
    except (TopoError, OSError) as exc:
        print(f"topo.load_sweep: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
