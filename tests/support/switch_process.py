"""`python -m p4target switch ARGS` as a child process of a test: its stdout lines, waits on
them, the Thrift CLI against it, and a stop by PID."""
import os
import queue
import signal
import subprocess
import sys
import threading
import time

from support.ports import free_port as free_tcp_port

PY = sys.executable


class SwitchProcess:
    """A switch started with `args`; unless they hold `--`, gRPC listens on a free local port
    (never the default 0.0.0.0:9559, which another switch may hold); Thrift listens on
    127.0.0.1 unless `args` choose a `--thrift-ip`."""

    def __init__(self, args: list[str], cwd: str | None = None) -> None:
        self.grpc_addr = None
        if not any(a.startswith("--thrift-ip") for a in args):
            args = ["--thrift-ip", "127.0.0.1", *args]  # tests listen on loopback only
        if "--" not in args:
            self.grpc_addr = f"127.0.0.1:{free_tcp_port()}"
            args = [*args, "--", "--grpc-server-addr", self.grpc_addr]
        self.proc = subprocess.Popen([PY, "-m", "p4target", "switch", *args], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, cwd=cwd)
        self.lines: list[str] = []
        self._new: queue.Queue = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._thrift_port: int | None = None

    def _read(self) -> None:
        for line in self.proc.stdout:
            self._new.put(line)
        self._new.put(None)

    def wait_for(self, text: str, timeout: float = 60.0) -> str:
        """The first stdout line containing `text`; AssertionError with the output if none comes."""
        deadline = time.monotonic() + timeout
        while True:
            for line in self.lines:
                if text in line:
                    return line
            try:
                line = self._new.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                line = None
            if line is None:
                err = self.proc.stderr.read() if self.proc.poll() is not None else ""
                raise AssertionError(f"switch never printed {text!r}; stdout={self.lines} stderr={err}")
            self.lines.append(line)

    def thrift_port(self) -> int:
        if self._thrift_port is None:
            self._thrift_port = int(self.wait_for("Thrift server listening on port").rsplit(" ", 1)[1])
        return self._thrift_port

    def wait_ready(self) -> "SwitchProcess":
        self.thrift_port()
        self.wait_for("switch ready")
        return self

    def cli(self, commands: str) -> str:
        """Run `commands` through simple_switch_CLI; its stdout."""
        r = subprocess.run([os.path.join(os.path.dirname(PY), "simple_switch_CLI"), "--thrift-port",
                            str(self.thrift_port())], input=commands, capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 0 and "Traceback" not in r.stdout + r.stderr, r.stdout + r.stderr
        return r.stdout

    def stop(self, sig: int = signal.SIGTERM) -> int:
        """Send `sig` by PID; the exit code (-9 after a SIGKILL when it did not exit in 20 s).
        Lines printed until the exit are appended to `lines`."""
        if self.proc.poll() is None:
            os.kill(self.proc.pid, sig)
        try:
            return self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            return -9
        finally:
            self._reader.join(timeout=5)
            while True:
                try:
                    line = self._new.get_nowait()
                except queue.Empty:
                    break
                if line is not None:
                    self.lines.append(line)
            self.proc.stdout.close()
            self.proc.stderr.close()
