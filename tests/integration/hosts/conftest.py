"""Start host agents as real processes on 127.0.0.1; every one is stopped by PID afterwards."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hosts.exchange.job_key import create_key_file
from support.ports import free_port

ROOT = Path(__file__).resolve().parents[3]


def read_jsonl(path) -> list[dict]:
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


JOB_AGENTS = ("hosts.ps", "hosts.worker")


class Agents:
    """Starts `python -m MODULE ...`; stop_all() sends SIGTERM then SIGKILL, by PID.
    The PS and workers get the test's job key (`job_key`) unless given --job-key themselves."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.procs: list[subprocess.Popen] = []
        self.job_key = str(tmp / "job.key")
        create_key_file(self.job_key)

    free_port = staticmethod(free_port)
    read_jsonl = staticmethod(read_jsonl)

    def start(self, module: str, *args: str) -> subprocess.Popen:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        if module in JOB_AGENTS and "--job-key" not in args:
            args = (*args, "--job-key", self.job_key)
        proc = subprocess.Popen([sys.executable, "-m", module, *args], cwd=ROOT, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.procs.append(proc)
        return proc

    def wait(self, proc: subprocess.Popen, timeout: float = 60) -> tuple[int, str, str]:
        out, err = proc.communicate(timeout=timeout)
        return proc.returncode, out, err

    def records(self, log: Path) -> list[dict]:
        """The records `log` holds so far (none while it is missing or a line is half written)."""
        try:
            return read_jsonl(log)
        except (ValueError, FileNotFoundError):
            return []

    def wait_for_record(self, log: Path, pred, timeout: float = 60.0) -> None:
        """Wait until a record of `log` satisfies `pred`; on a timeout the error names the
        log's last record and every agent that has exited, with its exit code and last error line."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if any(pred(e) for e in self.records(log)):
                return
            time.sleep(0.05)
        held = self.records(log)
        exited = [f"{p.args[2]} (pid {p.pid}) exited {p.returncode}: "
                  f"{(p.stderr.read().strip().splitlines() or ['no stderr'])[-1]}"
                  for p in self.procs if p.poll() is not None]
        raise AssertionError(f"{log.name}: condition not met within {timeout} s; last record "
                             f"{held[-1] if held else None}; exited agents: {exited or 'none'}")

    def stop_all(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGTERM)
        end = time.monotonic() + 5
        for proc in self.procs:
            try:
                proc.wait(timeout=max(0.1, end - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait()
            for stream in (proc.stdout, proc.stderr):
                if stream:
                    stream.close()


@pytest.fixture
def agents(tmp_path):
    a = Agents(tmp_path)
    yield a
    a.stop_all()
