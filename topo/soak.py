"""`python -m topo.soak` (`make soak`, not in CI): two training jobs side by side on the incast
bottleneck with background TCP traffic for a long time (30 minutes by default), to show that
nothing grows. Every ``--interval`` seconds it samples each recorded process's RSS, open fds and
threads, the switches' table entries, the controller's state file and established TCP
connections, the log files' sizes and the jobs' rounds into ``OUT/samples.jsonl``; at the end
it writes ``OUT/meta.json``, ``OUT/summary.md`` and plots (topo/soak_report.py) and exits
non-zero when a job ended early or a process grew.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

from mininet.log import setLogLevel

from controller.adaptation import ADAPTATIONS_KEPT
from controller.jobs import HISTORY
from controller.state import EPOCH_HISTORY
from topo import proc_stats, soak_report
from topo.errors import TopoError
from topo.pidfile import RunRecord, is_same_process
from topo.session import TWO_JOBS_POLICY, RunConfig, RunSession
from topo.topologies import TopoParams
from topo.training import json_lines

# Jobs run until the soak ends; they are stopped (SIGTERM) then.
ENDLESS_ROUNDS = 10_000_000
WORKERS = 3
PARAMS = TopoParams(workers=WORKERS, background=2, bottleneck_pps=2000, jobs=2)


class RoundCounter:
    """Rounds a job's parameter server has closed, read from its log as it grows."""

    def __init__(self, log: Path) -> None:
        self.log = log
        self.offset = 0
        self.rounds = 0
        self._tail = ""

    def read(self) -> int:
        """Rounds closed so far (the highest round number seen, plus one)."""
        try:
            with open(self.log, encoding="utf-8", errors="replace") as f:
                f.seek(self.offset)
                text = self._tail + f.read()
                self.offset = f.tell()
        except OSError:
            return self.rounds
        text, _, self._tail = text.rpartition("\n")
        for row in json_lines(text):
            if row.get("event") == "round" and isinstance(row.get("round"), int):
                self.rounds = max(self.rounds, row["round"] + 1)
        return self.rounds


def _gradctl_json(session: RunSession, *args: str) -> tuple[Any, int | None]:
    """(parsed output, output length) of `gradctl --json ARGS`; (None, None) when it failed."""
    try:
        done = session.gradctl("--json", *args)
    except (TopoError, subprocess.TimeoutExpired):
        return None, None
    if done.returncode not in (0, 3):
        return None, None
    try:
        return json.loads(done.stdout), len(done.stdout)
    except ValueError:
        return None, len(done.stdout)


def sample(session: RunSession, counters: dict[int, RoundCounter], since: float, t0: float) -> dict[str, Any]:
    """One sample (the schema in topo/soak_report.py)."""
    record = RunRecord.load(session.config.log_dir)
    procs: dict[str, dict[str, int | None]] = {}
    controller_pid = None
    for p in record.processes if record else []:
        if p.kind == "node-shell" or not is_same_process(p.pid, p.start_time):
            continue
        rss = proc_stats.rss_kib(p.pid)
        if rss is not None:
            procs[f"{p.name} ({p.kind})"] = {"pid": p.pid, "rss_kib": rss, "fds": proc_stats.open_fds(p.pid),
                                             "threads": proc_stats.threads(p.pid)}
        if p.kind == "controller":
            controller_pid = p.pid
    rows, _ = _gradctl_json(session, "switches")
    switches = {row["switch"]: row.get("entries") for row in rows} if isinstance(rows, list) else {}
    jobs, jobs_view = _gradctl_json(session, "jobs")
    log_dir = Path(session.config.log_dir)
    state = log_dir / f"{session.topo.name}.controller.json"
    logs = {}
    for path in sorted(log_dir.iterdir()):
        try:
            st = path.stat()
        except OSError:
            continue
        if path.is_file() and st.st_mtime >= since and path.suffix in (".log", ".json", ".jsonl"):
            logs[path.name] = st.st_size
    now = time.time()
    return {"t": now, "elapsed_s": round(time.monotonic() - t0, 1), "load": list(os.getloadavg()),
            "procs": procs, "switches": switches,
            "controller": {"state_file_bytes": state.stat().st_size if state.exists() else None,
                           "tcp_established": (None if controller_pid is None
                                               else proc_stats.tcp_established(controller_pid)),
                           "jobs_view_bytes": jobs_view, "capped": capped_counts(state, jobs)},
            "logs": logs, "rounds": {str(j): c.read() for j, c in counters.items()}}


def capped_counts(state: Path, jobs: Any) -> dict[str, list[int]]:
    """What the capped controller series hold, each as [count, documented cap]: the PCN changes
    and (the most of any job's) epoch changes kept in the state file, and the most reports any
    job's `gradctl jobs` entry shows; a figure that cannot be read is left out."""
    out: dict[str, list[int]] = {}
    try:
        doc = json.loads(state.read_text())
    except (OSError, ValueError):
        doc = None
    if isinstance(doc, dict):
        if isinstance(doc.get("adaptations"), list):
            out["state file: PCN changes kept"] = [len(doc["adaptations"]), ADAPTATIONS_KEPT]
        epochs = doc.get("epochs")
        if isinstance(epochs, dict):
            kept = [len(e.get("history") or []) for e in epochs.values() if isinstance(e, dict)]
            out["state file: epoch changes kept per job"] = [max(kept, default=0), EPOCH_HISTORY]
    if isinstance(jobs, list):
        kept = [len(j.get("rounds") or []) for j in jobs if isinstance(j, dict)]
        out["`gradctl jobs` view: reports kept per job"] = [max(kept, default=0), HISTORY]
    return out


def _counters(session: RunSession) -> dict[int, RoundCounter]:
    out = {}
    for job_id, job in session.running.items():
        ps = next(p for p in job.processes.values() if p.name.startswith("ps@"))
        out[job_id] = RoundCounter(ps.log)
    return out


def run_soak(args: argparse.Namespace, command: str) -> int:
    """Run the soak and write its samples, summary and plots; 0 when it passed, else 1."""
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for old in ("samples.jsonl", "summary.md", "meta.json"):
        (out / old).unlink(missing_ok=True)
    duration = args.minutes * 60
    warm_up = min(args.warm_up, duration / 3)
    cfg = RunConfig(topo_name="incast", build_dir=args.build, log_dir=args.log_dir, params=PARAMS,
                    policy=TWO_JOBS_POLICY, rounds=ENDLESS_ROUNDS)
    since = time.time()
    load_start = list(os.getloadavg())
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    samples: list[dict[str, Any]] = []
    with RunSession(cfg) as session, open(out / "samples.jsonl", "w") as sink:
        print("background: " + "; ".join(session.start_background(args.flows, duration + 120)), flush=True)
        jobs = [session.start_job(rounds=ENDLESS_ROUNDS, workers=WORKERS) for _ in range(2)]
        t0 = time.monotonic()
        counters = _counters(session)
        print(f"jobs {jobs} started; sampling every {args.interval:g} s for {args.minutes:g} min "
              f"(warm-up {warm_up:g} s) into {out}", flush=True)
        k = 0
        while True:
            samples.append(_record(sink, sample(session, counters, since, t0)))
            ended = [j for j, job in session.running.items() if job.finished()]
            k += 1
            if ended or k * args.interval > duration + 1e-6:
                break
            time.sleep(max(0.0, t0 + k * args.interval - time.monotonic()))
        ended = [j for j, job in session.running.items() if job.finished()]
    meta = {"command": command, "minutes": args.minutes, "interval_s": args.interval, "warm_up_s": warm_up,
            "started": started, "cpus": os.cpu_count(), "load_start": load_start,
            "load_end": samples[-1]["load"], "ended_early": ended,
            "config": {"topology": f"incast, {PARAMS.jobs} jobs x {WORKERS} workers (ltp), "
                                   f"{PARAMS.background} background hosts, bottleneck {PARAMS.bottleneck_pps} pps",
                       "policy": TWO_JOBS_POLICY,
                       "background": f"{args.flows} TCP flow(s) per sender (reno + ECN)",
                       "seed": "the agents' default (--seed 1)",
                       "switch": os.environ.get("SWITCH") or "default (embedded unless simple_switch_grpc is on PATH)"}}
    fails = soak_report.write_report(samples, meta, out)
    rounds = samples[-1]["rounds"]
    print(f"soak of {samples[-1]['elapsed_s'] / 60:.1f} min, rounds per job {rounds}; summary in {out / 'summary.md'}")
    print("soak: PASS" if not fails else "soak: FAIL: " + "; ".join(fails))
    return 0 if not fails else 1


def _record(sink: IO[str], smp: dict[str, Any]) -> dict[str, Any]:
    sink.write(json.dumps(smp, sort_keys=True) + "\n")
    sink.flush()
    rss = sum(p["rss_kib"] or 0 for p in smp["procs"].values())
    print(f"{time.strftime('%H:%M:%S')} +{smp['elapsed_s']:.0f} s: rounds {smp['rounds']}; total RSS "
          f"{rss / 1024:.1f} MiB; entries {smp['switches']}; controller {smp['controller']}", flush=True)
    return smp


def main(argv: list[str] | None = None) -> int:
    """Entry point of `python -m topo.soak`."""
    argv = sys.argv[1:] if argv is None else argv
    p = argparse.ArgumentParser(prog="python -m topo.soak", description=__doc__.splitlines()[0])
    p.add_argument("--minutes", type=float, default=30.0, help="how long (default 30)")
    p.add_argument("--interval", type=float, default=60.0, help="seconds between samples (default 60)")
    p.add_argument("--warm-up", type=float, default=300.0,
                   help="seconds left out of slopes and verdicts (default 300, at most a third of the run)")
    p.add_argument("--flows", type=int, default=2, help="background TCP flows per sender (default 2)")
    p.add_argument("--build", default="build", help="folder with gradlane.json and its P4Info")
    p.add_argument("--log-dir", default="logs", help="logs (default logs)")
    p.add_argument("--out", default="logs/soak", help="samples, summary and plots (default logs/soak)")
    args = p.parse_args(argv)
    if args.minutes <= 0 or args.flows < 1 or args.interval <= 0 or args.warm_up < 0:
        print("topo.soak: error: need --minutes > 0, --interval > 0, --warm-up >= 0 and --flows >= 1",
              file=sys.stderr)
        return 2
    if args.interval > args.minutes * 60:
        print("topo.soak: error: --interval is longer than the run", file=sys.stderr)
        return 2
    setLogLevel("warning")
    try:
        return run_soak(args, "python -m topo.soak " + " ".join(map(shlex.quote, argv)))
    except (TopoError, OSError) as exc:
        print(f"topo.soak: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
