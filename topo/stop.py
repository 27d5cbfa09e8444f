"""`python -m topo.stop` (`make stop`): end everything a run recorded, by PID, and remove its
interfaces. Idempotent: with nothing recorded it says so and exits 0.

This is the targeted equivalent of `mn -c`: it touches only what the run record names, never
other users' Mininet processes (`mn -c` kills every `mnexec` and deletes `/tmp/*.log`).
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from pathlib import Path

from topo.pidfile import RunRecord, delete_interface, is_same_process, terminate

_ORDER = {"run": 0, "agent": 1, "controller": 2, "switch": 3, "node-shell": 4}


@dataclass
class StopReport:
    """What a stop did."""

    stopped: list[str] = field(default_factory=list)
    interfaces: list[str] = field(default_factory=list)
    found_record: bool = False

    def lines(self) -> list[str]:
        """Human summary."""
        if not self.found_record:
            return ["topo.stop: nothing recorded (no run active)"]
        return [f"topo.stop: stopped {len(self.stopped)} process(es)"
                + (f": {', '.join(self.stopped)}" if self.stopped else ""),
                f"topo.stop: removed {len(self.interfaces)} leftover interface(s)"
                + (f": {', '.join(self.interfaces)}" if self.interfaces else "")]


def stop_recorded(log_dir: str | Path = "logs", *, include_run: bool = True) -> StopReport:
    """Stop every process in `log_dir`'s run record (the run itself first, so it can tear down
    its network; then agents, controller, switches, node shells), delete leftover interfaces,
    remove the record."""
    report = StopReport()
    record = RunRecord.load(log_dir)
    if record is None:
        return report
    report.found_record = True
    entries = sorted(record.processes, key=lambda p: _ORDER.get(p.kind, 1))
    for entry in entries:
        if entry.kind == "run" and not include_run:
            continue
        grace = 15.0 if entry.kind == "run" else 3.0
        if is_same_process(entry.pid, entry.start_time) and terminate(entry.pid, entry.start_time, grace):
            report.stopped.append(f"{entry.name}[{entry.pid}]")
    for name in record.interfaces:
        if delete_interface(name):
            report.interfaces.append(name)
    record.remove()
    return report


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit code."""
    parser = argparse.ArgumentParser(prog="python -m topo.stop", description=__doc__.splitlines()[0])
    parser.add_argument("--log-dir", default="logs", help="folder holding run.pids.json (default logs)")
    args = parser.parse_args(argv)
    for line in stop_recorded(args.log_dir).lines():
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
