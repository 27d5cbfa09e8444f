"""The Mininet CLI of `make run`, with gradlane commands: `train`, `stats`, `gradctl`, `topology`."""
from __future__ import annotations

import shlex
import sys
from typing import Any

from mininet.cli import CLI

from topo import agents
from topo.errors import TopoError
from topo.summary import render


class GradCLI(CLI):
    """Mininet's CLI plus commands that drive the run session."""

    def __init__(self, session: Any, **kwargs: Any) -> None:
        self.session = session
        super().__init__(session.net, **kwargs)

    def do_train(self, line: str) -> None:
        """train [--ddp] [ROUNDS] [WORKERS]: run a training job (PS + workers on the hosts, or
        with --ddp a PyTorch DDP job through gradlane's hook) and print its summary."""
        words = line.split()
        ddp = self.session.config.ddp_script
        if "--ddp" in words:
            words.remove("--ddp")
            ddp = ddp or agents.DDP_EXAMPLE
        try:
            args = [int(a) for a in words]
            if len(args) > 2 or any(a < 1 for a in args):
                raise ValueError
        except ValueError:
            print("usage: train [--ddp] [ROUNDS] [WORKERS]  (positive integers)")
            return
        rounds = args[0] if args else None
        workers = args[1] if len(args) > 1 else None
        print(f"training: job {self.session.jobs + 1}, {rounds or self.session.config.rounds} rounds ...")
        sys.stdout.flush()
        try:
            result = self.session.train(rounds=rounds, workers=workers, ddp_script=ddp)
        except TopoError as exc:
            print(f"train: error: {exc}")
            return
        print(render(result, self.session.stats(),
                     switch_logs={n: s.log for n, s in self.session.topo.switches.items()}))

    def do_job(self, line: str) -> None:
        """job start [ROUNDS] [WORKERS] | job wait [JOB] | job list: run jobs side by side
        (one per host group; `--jobs 2` gives the incast topology two)."""
        words = line.split()
        action, rest = (words[0], words[1:]) if words else ("list", [])
        try:
            numbers = [int(a) for a in rest]
            if any(n < 1 for n in numbers) or action not in ("start", "wait", "list") \
                    or len(numbers) > (2 if action == "start" else 1 if action == "wait" else 0):
                raise ValueError
        except ValueError:
            print("usage: job start [ROUNDS] [WORKERS] | job wait [JOB] | job list")
            return
        try:
            if action == "list":
                self.session.reap_jobs()
                running = self.session.running
                print("running: " + (", ".join(f"job {j} (host group {job.job.group + 1})"
                                               for j, job in sorted(running.items())) or "none"))
            elif action == "start":
                job_id = self.session.start_job(*(numbers + [None] * (2 - len(numbers))))
                group = self.session.running[job_id].job.group
                print(f"job {job_id} started on host group {group + 1}; `job wait {job_id}` "
                      f"prints its summary")
            else:
                running = sorted(self.session.running)
                job_id = numbers[0] if numbers else (running[0] if running else 0)
                result = self.session.finish_job(job_id)
                print(render(result, self.session.stats(),
                             switch_logs={n: s.log for n, s in self.session.topo.switches.items()}))
        except TopoError as exc:
            print(f"job: error: {exc}")

    def do_stats(self, line: str) -> None:
        """stats: per-switch counters (gradctl stats)."""
        self.do_gradctl("stats " + line)

    def do_gradctl(self, line: str) -> None:
        """gradctl ARGS: run gradctl against this run's controller (e.g. `gradctl policy show`)."""
        try:
            done = self.session.gradctl(*shlex.split(line))
        except (TopoError, ValueError) as exc:
            print(f"gradctl: error: {exc}")
            return
        sys.stdout.write(done.stdout)
        sys.stdout.write(done.stderr)

    def do_background(self, line: str) -> None:
        """background FLOWS | off: start FLOWS TCP flows per background host, or stop them."""
        word = line.strip()
        try:
            if word == "off":
                self.session.stop_background()
                print("background traffic stopped")
                return
            flows = int(word)
            if flows < 1:
                raise ValueError
        except ValueError:
            print("usage: background FLOWS | background off")
            return
        try:
            self.session.stop_background()
            for text in self.session.start_background(flows):
                print(text)
        except TopoError as exc:
            print(f"background: error: {exc}")

    def do_topology(self, line: str) -> None:
        """topology: where the topology description of this run is."""
        print(self.session.config.topology_path)
