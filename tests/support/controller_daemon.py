"""Helpers of the security tests: test P4Runtime switches, a real controller daemon process,
raw API requests, and subprocess runs measured in time and peak memory."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PEAK_SCRIPT = Path(__file__).resolve().with_name("peak_memory.py")
from google.protobuf import text_format

from controller import api
from support.controller_topologies import diamond
from support.dataplane import compile_dataplane
from support.p4runtime_server import TestP4RuntimeServer


@dataclass
class Finished:
    """A finished subprocess: exit status, output, wall time (s) and peak RSS (MB)."""

    code: int
    stdout: str
    stderr: str
    seconds: float
    cpu_seconds: float
    max_rss_mb: float


def run_measured(module: str, *args: str, timeout: float = 30.0) -> Finished:
    """``python -m MODULE ARGS`` from the repository, with its CPU time (its rusage) and its own
    peak RSS (VmHWM since exec, written at exit by tests/support/peak_memory.py)."""
    with tempfile.TemporaryDirectory() as tmp:
        peak_file = Path(tmp) / "peak"
        out_path, err_path = Path(tmp) / "out", Path(tmp) / "err"
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            t0 = time.monotonic()
            proc = subprocess.Popen([sys.executable, str(PEAK_SCRIPT), str(peak_file), module, *args],
                                    cwd=REPO, stdin=subprocess.DEVNULL, stdout=out, stderr=err)
            while True:
                pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
                if pid == proc.pid:
                    break
                if time.monotonic() - t0 > timeout:
                    os.kill(proc.pid, signal.SIGKILL)
                    os.wait4(proc.pid, 0)
                    proc.returncode = -9
                    raise AssertionError(f"{module} {args} still ran after {timeout} s")
                time.sleep(0.01)
            seconds = time.monotonic() - t0
            proc.returncode = os.waitstatus_to_exitcode(status)
        peak_kb = float(peak_file.read_text()) if peak_file.exists() else float("inf")
        return Finished(proc.returncode, out_path.read_text(errors="replace"),
                        err_path.read_text(errors="replace"), seconds,
                        usage.ru_utime + usage.ru_stime, peak_kb / 1024.0)


def run_gradctl(*args: str, timeout: float = 30.0) -> Finished:
    """The real gradctl (``python -m controller.gradctl ARGS``) as a measured subprocess."""
    return run_measured("controller.gradctl", *args, timeout=timeout)


class Network:
    """Four test P4Runtime switches and the files a daemon needs, in ``folder``."""

    def __init__(self, folder: Path) -> None:
        self.dir = folder
        self.servers = {f"s{i}": TestP4RuntimeServer().start() for i in range(1, 5)}
        self.topology = folder / "diamond.topology.json"
        self.topology.write_text(json.dumps(diamond({n: s.address for n, s in self.servers.items()})))
        self.p4info = folder / "gradlane.p4info.txtpb"
        self.p4info.write_text(text_format.MessageToString(compile_dataplane().p4info))
        self.bmv2 = folder / "gradlane.json"
        self.bmv2.write_text('{"program": "test"}')
        self.socket = folder / "ctl.sock"
        self.state = folder / "state.json"

    def stop(self) -> None:
        for s in self.servers.values():
            s.stop()

    def start_daemon(self, *extra: str, wait: bool = True) -> subprocess.Popen:
        """A controller daemon process on this network (stop it with :func:`stop_daemon`)."""
        proc = subprocess.Popen(
            [sys.executable, "-m", "controller.daemon", "--topology", str(self.topology),
             "--p4info", str(self.p4info), "--bmv2-json", str(self.bmv2),
             "--listen", str(self.socket), "--pid-file", str(self.dir / "ctl.pid"),
             "--state-file", str(self.state), "--no-queues", "--plaintext", *extra],
            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if not wait:
            return proc
        deadline = time.monotonic() + 30
        while not (api.ping(self.socket) or {}).get("ready"):
            if proc.poll() is not None or time.monotonic() > deadline:
                stop_daemon(proc)
                raise AssertionError(f"daemon did not come up: {proc.communicate()}")
            time.sleep(0.1)
        return proc


def stop_daemon(proc: subprocess.Popen) -> tuple[str, str]:
    """SIGTERM (then SIGKILL) the daemon by its PID; its output."""
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
    return proc.communicate()


def raw_request(sock: Path, payload: bytes, timeout: float = 5.0) -> dict:
    """Send one raw line to the API socket; the decoded answer (AssertionError if none)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(str(sock))
        s.sendall(payload if payload.endswith(b"\n") else payload + b"\n")
        data = b""
        while not data.endswith(b"\n"):
            chunk = s.recv(1 << 16)
            if not chunk:
                break
            data += chunk
    assert data, f"no answer to {payload[:80]!r}"
    return json.loads(data)
