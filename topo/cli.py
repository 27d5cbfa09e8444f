"""The Mininet CLI of `make run`, with gradlane commands: `train`, `stats`, `gradctl`, `topology`."""
from __future__ import annotations

import shlex
import sys
from typing import Any

from mininet.cli import CLI

from topo.errors import TopoError
from topo.summary import render


class GradCLI(CLI):
    """Mininet's CLI plus commands that drive the run session."""

    def __init__(self, session: Any, **kwargs: Any) -> None:
        self.session = session
        super().__init__(session.net, **kwargs)

    def do_train(self, line: str) -> None:
        """train [ROUNDS] [WORKERS]: run a training job (PS + workers on the hosts) and print its summary."""
        try:
            args = [int(a) for a in line.split()]
            if len(args) > 2 or any(a < 1 for a in args):
                raise ValueError
        except ValueError:
            print("usage: train [ROUNDS] [WORKERS]  (positive integers)")
            return
        rounds = args[0] if args else None
        workers = args[1] if len(args) > 1 else None
        print(f"training: job {self.session.jobs + 1}, {rounds or self.session.config.rounds} rounds ...")
        sys.stdout.flush()
        try:
            result = self.session.train(rounds=rounds, workers=workers)
        except TopoError as exc:
            print(f"train: error: {exc}")
            return
        print(render(result, self.session.stats(),
                     switch_logs={n: s.log for n, s in self.session.topo.switches.items()}))

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
