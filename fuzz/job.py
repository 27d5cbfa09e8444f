"""A real training job on loopback for the transport fuzzers: a ``hosts.ps`` process and one
``hosts.worker`` on fixed ports, with the job's key in a private temporary folder; ``finish``
waits for both and records in the report whether they completed their rounds cleanly."""
from __future__ import annotations

import json
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

from fuzz.report import Report
from hosts.exchange.job_key import create_key_file

ROOT = Path(__file__).resolve().parents[1]
JOB = 1
ROUNDS = 4
LOGS = {"ps": "ps.jsonl", "worker": "w.jsonl"}


def free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LoopbackJob:
    """A PS on ``ps_port`` and (once ``start_worker`` ran) worker rank 0 on ``worker_port``;
    ``extra`` flags go to both."""

    def __init__(self, *extra: str) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="gradlane-fuzz-")
        self.dir = Path(self._tmp.name)
        self.key = str(self.dir / "job.key")
        create_key_file(self.key)
        self.ps_port = free_udp_port()
        self.worker_port = free_udp_port()
        self.common = ["--seed", "1", "--rounds", str(ROUNDS), "--hidden", "16", "--job", str(JOB),
                       "--job-key", self.key, "--join-timeout", "20", "--peer-timeout", "20", *extra]
        self.procs: dict[str, subprocess.Popen] = {}

    def start_ps(self) -> None:
        self.procs["ps"] = subprocess.Popen(
            [sys.executable, "-m", "hosts.ps", "--workers", "1", "--bind", "127.0.0.1",
             "--port", str(self.ps_port), "--log", str(self.dir / LOGS["ps"]), *self.common],
            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    def start_worker(self) -> None:
        self.procs["worker"] = subprocess.Popen(
            [sys.executable, "-m", "hosts.worker", "--rank", "0", "--workers", "1",
             "--ps", "127.0.0.1", "--ps-port", str(self.ps_port), "--bind", "127.0.0.1",
             "--port", str(self.worker_port), "--log", str(self.dir / LOGS["worker"]), *self.common],
            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    def running(self) -> bool:
        return all(p.poll() is None for p in self.procs.values())

    def finish(self, report: Report, timeout: float = 120) -> None:
        """Wait for both agents; a hang, a traceback or a failed exit is a failure."""
        for name, proc in self.procs.items():
            try:
                _, err = proc.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                _, err = proc.communicate()
                report.fail("hang", f"the {name} did not finish its {ROUNDS} rounds under fire")
                continue
            report.outcomes[f"{name} exit {proc.returncode}"] += 1
            if "Traceback" in err:
                report.fail("traceback", f"{name}: {err[-300:]}")
            elif proc.returncode != 0:
                report.fail("crash", f"{name} exit {proc.returncode}: {err[-300:]}")

    def counters(self, name: str) -> dict[str, int]:
        """The drop and event counters the agent `name` (ps, worker) logged when done."""
        try:
            records = [json.loads(line) for line in (self.dir / LOGS[name]).read_text().splitlines()
                       if line.strip()]
        except (OSError, ValueError):
            return {}
        return next((r.get("counters", {}) for r in records if r.get("event") == "done"), {})

    def close(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        self._tmp.cleanup()
