"""Start host agents as real processes on 127.0.0.1; every one is stopped by PID afterwards."""
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hosts.exchange.job_key import create_key_file

ROOT = Path(__file__).resolve().parents[3]


def free_port(kind=socket.SOCK_DGRAM) -> int:
    """A port free for both UDP and TCP on 127.0.0.1."""
    for _ in range(50):
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
            u.bind(("127.0.0.1", 0))
            port = u.getsockname()[1]
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as t:
                try:
                    t.bind(("127.0.0.1", port))
                except OSError:
                    continue
            return port
    raise RuntimeError("no free port")


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
