"""Fault injection into a running training job, by PID: kill a switch, the controller, or a
worker (which is started again once the job went on without it), at a chosen round.

`FaultInjector` drives the chaos topology tests; `python -m topo.chaos` (`make chaos`, not in
CI) runs training jobs back to back for a few minutes, one arm after the other (ltp, mlt, tcp),
with random faults of every kind and prints the faults injected and survived, what each cost,
and the jobs finished and lost, per arm and in all.
"""
from __future__ import annotations

import argparse
import os
import random
import signal
import statistics
import sys
import time
from typing import Any

from mininet.log import setLogLevel

from topo.errors import RunError, TopoError
from topo.fault_report import fault_lines, fault_rows
from topo.processes import ManagedProcess
from topo.session import RunConfig, RunSession
from topo.summary import final_accuracy, render, rounds_completed
from topo.topologies import TopoParams
from topo.training import TrainingJob, TrainingResult, json_lines

KINDS = ("switch", "controller", "worker")
ARMS = ("ltp", "mlt", "tcp")
# TCP rounds are several times shorter here (no deadline, no probes): a tcp job trains this many
# times --rounds so that a killed worker (seconds to start again) is back before the job ends.
ROUNDS_FACTOR = {"tcp": 4}
# Agent flags of chaos jobs: a dead worker is left behind after 3 s, not the default 10.
AGENT_FLAGS = ("--peer-timeout", "3")
# What the job must still have ahead of it when a fault is injected: a killed worker is left
# behind after --peer-timeout, then takes a few seconds to start again and re-join (13 s seen
# on a loaded 2-core machine). Rounds are measured, not assumed: with MTU-sized chunks a round takes tens of ms, and 25 rounds (the
# rule before) ended a job before a killed worker was back.
FAULT_HEADROOM_S = 20.0


class FaultInjector:
    """Kills processes of a session's running job by PID and notes each kill."""

    def __init__(self, session: RunSession, job_id: int) -> None:
        if session.supervisor is None:
            raise RunError("fault injection needs the session's supervisor (RunConfig.supervise)")
        self.session = session
        self.job: TrainingJob = session.running[job_id]
        self.workers: list[dict[str, Any]] = []   # worker faults (the supervisor notes the rest)
        self._before = len(session.supervisor.faults)   # faults of earlier jobs are not ours

    def _ps(self) -> ManagedProcess:
        return next(p for p in self.job.processes.values() if p.name.startswith("ps@"))

    def ps_records(self) -> list[dict[str, Any]]:
        """The parameter server's records so far."""
        return json_lines(self._ps().output())

    def ps_round(self) -> int:
        """The last round the PS finished (-1 before the first)."""
        return max((r["round"] for r in self.ps_records() if r.get("event") == "round"), default=-1)

    def seconds_left(self, rounds: int) -> float:
        """The job's remaining time at the median of its last 20 round times (inf before a
        round ended): rounds speed up once the model and the deadlines settle."""
        done = [float(r.get("time_s") or 0.0) for r in self.ps_records() if r.get("event") == "round"]
        if not done:
            return float("inf")
        return (rounds - len(done)) * statistics.median(done[-20:])

    def wait_round(self, round_: int, timeout: float = 300.0) -> None:
        """Block until the PS finished ``round_``; RunError if it exits or time runs out first."""
        end = time.monotonic() + timeout
        while self.ps_round() < round_:
            if not self._ps().alive():
                raise RunError(f"the parameter server exited before round {round_}")
            if time.monotonic() > end:
                raise RunError(f"the parameter server did not reach round {round_} in {timeout:g} s")
            time.sleep(0.1)

    def kill_switch(self, name: str, timeout: float = 60.0) -> None:
        """SIGKILL switch ``name``; wait until the controller re-programmed its restart."""
        assert self.session.network is not None and self.session.supervisor is not None
        seen = len(self.session.supervisor.faults)
        _kill(self.session.network.switch(name).pid_of_process, name)
        self._wait_recovered(seen + 1, name, timeout)

    def kill_controller(self, timeout: float = 60.0) -> None:
        """SIGKILL the controller daemon; wait until its restart serves again."""
        assert self.session.controller is not None and self.session.supervisor is not None
        seen = len(self.session.supervisor.faults)
        _kill(self.session.controller.pid, "the controller")
        self._wait_recovered(seen + 1, "controller", timeout)

    def _wait_recovered(self, faults: int, name: str, timeout: float) -> None:
        assert self.session.supervisor is not None
        if not self.session.supervisor.wait_recovered(faults, timeout):
            raise RunError(f"{name} did not recover within {timeout:g} s (logs/supervisor.log)")

    def kill_worker(self, rank: int, timeout: float = 120.0) -> None:
        """SIGKILL worker ``rank``; once the PS went on without it, start it again (same flags)
        and wait until the PS re-admitted it."""
        proc = next(p for p in self.job.processes.values() if p.name.startswith(f"worker{rank}@"))
        crashed = time.time()
        _kill(proc.pid, proc.name)
        proc.wait_exit(10)
        self.workers.append({"name": proc.name, "kind": "worker", "rank": rank,
                             "crashed_at": round(crashed, 3)})
        self._wait_member(rank, "absent", crashed, timeout)
        proc.restart()
        self._wait_member(rank, "rejoined", crashed, timeout)

    def _wait_member(self, rank: int, change: str, since: float, timeout: float) -> None:
        end = time.monotonic() + timeout
        while not any(r.get("event") == "member" and r.get("rank") == rank and r.get("change") == change
                      and float(r.get("t", 0)) >= since for r in self.ps_records()):
            if not self._ps().alive():
                raise RunError(f"the parameter server exited before worker rank {rank} was {change}")
            if time.monotonic() > end:
                raise RunError(f"worker rank {rank} was not {change} within {timeout:g} s")
            time.sleep(0.1)

    def one_of_each(self) -> None:
        """The chaos test's script: switch s1 dies at round 10, the controller at 25, worker
        rank 2 at 40 (tests/topology/test_chaos.py, scripts/accuracy_spread.py)."""
        self.wait_round(10)
        self.kill_switch("s1")
        self.wait_round(25)
        self.kill_controller()
        self.wait_round(40)
        self.kill_worker(2)

    def faults(self) -> list[dict[str, Any]]:
        """Every fault injected so far (supervisor's and workers'), in time order."""
        assert self.session.supervisor is not None
        ours = self.session.supervisor.snapshot()[self._before:]
        return sorted(ours + self.workers, key=lambda f: f["crashed_at"])


def _kill(pid: int | None, what: str) -> None:
    """SIGKILL ``pid``; RunError when it is not running (the supervisor gave up on it)."""
    if pid is None or pid <= 0:   # never a group or "every process" signal
        raise RunError(f"{what} has no process")
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        raise RunError(f"{what} is not running (see logs/supervisor.log)") from None


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m topo.chaos", description=__doc__.splitlines()[0])
    p.add_argument("--minutes", type=float, default=3.0, help="how long to inject faults (default 3)")
    p.add_argument("--rounds", type=int, default=400,
                   help="rounds of each job (default 400: with MTU-sized chunks about a minute)")
    p.add_argument("--every", type=int, default=40, metavar="ROUNDS",
                   help="rounds between faults: uniform from 3 to ROUNDS (default 40)")
    p.add_argument("--seed", type=int, default=1, help="seed of the fault schedule")
    p.add_argument("--arms", default=",".join(ARMS),
                   help=f"transports of the jobs, in turn (default {','.join(ARMS)})")
    p.add_argument("--build", default="build", help="folder with gradlane.json and its P4Info")
    p.add_argument("--log-dir", default="logs", help="logs (default logs)")
    return p


def run_chaos(args: argparse.Namespace) -> int:
    """Jobs back to back with random faults until ``args.minutes`` pass; the exit code."""
    rng = random.Random(args.seed)
    cfg = RunConfig(topo_name="incast", build_dir=args.build, log_dir=args.log_dir,
                    params=TopoParams(workers=3, background=0, bottleneck_pps=2000),
                    rounds=args.rounds, agent_args=AGENT_FLAGS)
    end = time.monotonic() + args.minutes * 60
    finished = lost = 0
    all_rows: list[dict[str, Any]] = []
    per_arm: dict[str, dict[str, int]] = {}
    arms = args.arms.split(",")
    with RunSession(cfg) as session:
        switches = list(session.topo.switches)
        while time.monotonic() < end:
            arm = arms[session.jobs % len(arms)]
            rounds = args.rounds * ROUNDS_FACTOR.get(arm, 1)
            job_id = session.start_job(rounds=rounds, workers=3, transport=arm)
            print(f"job {job_id}: --transport {arm}, {rounds} rounds", flush=True)
            injector = FaultInjector(session, job_id)
            next_fault = rng.randint(3, args.every)
            result: TrainingResult | None = None
            try:
                # the last faults leave a killed worker time to be left behind and come back
                while next_fault < rounds and time.monotonic() < end:
                    injector.wait_round(next_fault)
                    if injector.seconds_left(rounds) < FAULT_HEADROOM_S:
                        break
                    kind = rng.choice(KINDS)
                    print(f"job {job_id} round {next_fault}: killing "
                          + {"switch": "a switch", "controller": "the controller",
                             "worker": "a worker"}[kind], flush=True)
                    if kind == "switch":
                        injector.kill_switch(rng.choice(switches))
                    elif kind == "controller":
                        injector.kill_controller()
                    else:
                        injector.kill_worker(rng.randrange(3))
                    next_fault = injector.ps_round() + rng.randint(3, args.every)
            except RunError as exc:
                print(f"job {job_id}: {exc}", flush=True)
            finally:
                result = session.finish_job(job_id, timeout=600)
            rows = fault_rows(injector.faults(), result)
            for row in rows:
                row["arm"] = arm
            all_rows += rows
            tally = per_arm.setdefault(arm, {"finished": 0, "lost": 0})
            print(render(result, None, faults=injector.faults()), flush=True)
            if result.ok and rounds_completed(result) == rounds:
                finished += 1
                tally["finished"] += 1
            else:
                lost += 1
                tally["lost"] += 1
            print(f"job {job_id} ({arm}): {'finished' if result.ok else 'LOST'}, accuracy "
                  f"{final_accuracy(result)}", flush=True)
    survived = sum(1 for r in all_rows if r["recovery_s"] is not None)
    print("\nchaos summary")
    print("\n".join(fault_lines(all_rows)))
    for kind in KINDS:
        mine = [r for r in all_rows if r["kind"] == kind]
        if mine:
            rec = [r["recovery_s"] for r in mine if r["recovery_s"] is not None]
            print(f"  {kind}: {len(mine)} injected, {len(rec)} survived; recovery "
                  f"mean {sum(rec) / max(1, len(rec)):.2f} s, max {max(rec, default=0):.2f} s; "
                  f"rounds lost {sum(r['rounds_cost'] for r in mine)}")
    for arm, tally in per_arm.items():
        mine = [r for r in all_rows if r["arm"] == arm]
        print(f"  arm {arm}: {len(mine)} faults injected, "
              f"{sum(1 for r in mine if r['recovery_s'] is not None)} survived; jobs finished "
              f"{tally['finished']}, lost {tally['lost']}")
    print(f"faults injected {len(all_rows)}, survived {survived}; rounds lost "
          f"{sum(r['rounds_cost'] for r in all_rows)}; jobs finished {finished}, lost {lost}")
    return 0 if lost == 0 and survived == len(all_rows) else 1


def main(argv: list[str] | None = None) -> int:
    """Entry point of `python -m topo.chaos`."""
    args = _parser().parse_args(argv)
    if args.minutes <= 0 or args.rounds < 40 or args.every < 3:
        print("topo.chaos: error: need --minutes > 0, --rounds >= 40, --every >= 3", file=sys.stderr)
        return 2
    bad = [a for a in args.arms.split(",") if a not in ARMS]
    if bad:
        print(f"topo.chaos: error: --arms {args.arms}: {', '.join(bad)} is not one of "
              f"{', '.join(ARMS)}", file=sys.stderr)
        return 2
    setLogLevel("warning")
    try:
        return run_chaos(args)
    except TopoError as exc:
        print(f"topo.chaos: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
