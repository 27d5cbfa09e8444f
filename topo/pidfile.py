"""The run record: every process and interface a run starts, so `python -m topo.stop` ends them.

The record (`logs/run.pids.json`) is rewritten atomically on every change, so a run killed at
any moment leaves an accurate list behind. Each process is stored with its kernel start time:
a PID that was recycled by an unrelated process is never signalled.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from p4target.atomic_files import write_text

RECORD_NAME = "run.pids.json"


def process_start_time(pid: int) -> int | None:
    """The kernel start time (clock ticks since boot) of `pid`, or None if it does not exist."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # Field 2 (comm) may contain spaces and parentheses: split after its closing ')'.
    fields = stat.rpartition(")")[2].split()
    return int(fields[19])


def is_same_process(pid: int, start_time: int | None) -> bool:
    """True while `pid` is alive and still the process recorded with `start_time`."""
    now = process_start_time(pid)
    if now is None:
        return False
    if _is_zombie(pid):
        return False
    return start_time is None or now == start_time


def _is_zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] == "Z"
    except OSError:
        return True


@dataclass
class ProcessEntry:
    """One recorded process."""

    pid: int
    name: str
    kind: str  # switch | controller | agent | host-shell | run
    start_time: int | None = None


@dataclass
class RunRecord:
    """What one run started: processes (in start order) and root-namespace interfaces."""

    path: Path
    topology: str = ""
    processes: list[ProcessEntry] = field(default_factory=list)
    interfaces: list[str] = field(default_factory=list)

    @classmethod
    def create(cls, log_dir: str | Path, topology: str) -> "RunRecord":
        """A fresh record for a run of `topology` in `log_dir`, holding this process."""
        record = cls(Path(log_dir) / RECORD_NAME, topology)
        record.add_process(os.getpid(), "topo.run", "run")
        return record

    @classmethod
    def load(cls, log_dir: str | Path) -> "RunRecord | None":
        """The record left in `log_dir`, or None when there is none (or it is unreadable)."""
        path = Path(log_dir) / RECORD_NAME
        try:
            data = json.loads(path.read_text())
            return cls(path, data.get("topology", ""),
                       [ProcessEntry(**p) for p in data.get("processes", [])],
                       list(data.get("interfaces", [])))
        except (OSError, ValueError, TypeError):
            return None

    def add_process(self, pid: int, name: str, kind: str) -> None:
        """Record a started process (its start time is read now) and save."""
        self.processes.append(ProcessEntry(pid, name, kind, process_start_time(pid)))
        self.save()

    def forget_process(self, pid: int) -> None:
        """Drop a process that has been stopped and save."""
        self.processes = [p for p in self.processes if p.pid != pid]
        self.save()

    def add_interfaces(self, names: list[str]) -> None:
        """Record root-namespace interfaces the run created and save."""
        self.interfaces += [n for n in names if n not in self.interfaces]
        self.save()

    def save(self) -> None:
        """Write the record atomically."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = {"topology": self.topology, "processes": [asdict(p) for p in self.processes],
                "interfaces": self.interfaces}
        write_text(self.path, json.dumps(data, indent=1) + "\n")

    def remove(self) -> None:
        """Delete the record file (after everything in it was stopped)."""
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass


def terminate(pid: int, start_time: int | None, grace: float = 3.0) -> bool:
    """SIGTERM `pid` (if it is still the recorded process), SIGKILL after `grace` seconds.

    Returns True if a live process was signalled. Reaps it when it is our child."""
    if not is_same_process(pid, start_time):
        _reap(pid)
        return False
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return False
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        _reap(pid)
        if not is_same_process(pid, start_time):
            return True
        time.sleep(0.05)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return True
    for _ in range(40):
        _reap(pid)
        if not is_same_process(pid, start_time):
            break
        time.sleep(0.05)
    return True


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def delete_interface(name: str) -> bool:
    """Delete a root-namespace link if it exists; True if one was deleted."""
    if not Path(f"/sys/class/net/{name}").exists():
        return False
    return subprocess.run(["ip", "link", "del", name], capture_output=True).returncode == 0
