"""Helper processes a run starts (controller daemon, host agents): log file, run record, stop by PID.

A process runs in the root namespace, or inside a Mininet host's namespace (`mnexec -da`, which
execs, so the recorded PID is the agent's own). Every one dies with the run (PR_SET_PDEATHSIG).
"""
from __future__ import annotations

import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any, Callable

from topo.errors import ProcessStartError
from topo.pidfile import RunRecord, process_start_time, terminate


def dying_with_parent(argv: list[str]) -> list[str]:
    """`argv` prefixed so that the process gets SIGTERM when the process that started it dies.

    util-linux's `setpriv --pdeathsig` sets the signal and execs, so the PID stays the program's.
    Not a Popen `preexec_fn`: that forces a plain fork(), which runs gRPC's fork handlers in the
    child; grpcio >= 1.81 then restarts its poller there and aborts on EBADF once close_fds
    closes the poller's epoll descriptor (grpc/grpc#43055). Without setpriv, no death signal.
    Raises FileNotFoundError when `argv[0]` is not an executable, as Popen would.
    """
    if shutil.which(argv[0]) is None:
        raise FileNotFoundError(2, "no such executable", argv[0])
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "TERM", "--", *argv] if setpriv else list(argv)


def log_tail(path: str | Path, lines: int = 15) -> str:
    """The last `lines` lines of a log file (or a note that it is empty/missing)."""
    try:
        text = Path(path).read_text(errors="replace").rstrip("\n")
    except OSError:
        return f"    (no log at {path})"
    if not text:
        return f"    ({path} is empty)"
    return "\n".join("    " + line for line in text.splitlines()[-lines:])


class ManagedProcess:
    """One started process with its log, recorded in the run record until stopped."""

    def __init__(self, name: str, kind: str, argv: list[str], log: str | Path,
                 record: RunRecord | None = None, host: Any = None, env: dict[str, str] | None = None) -> None:
        self.name = name
        self.kind = kind
        self.argv = argv
        self.log = Path(log)
        self.record = record
        self.host = host
        self.env = env
        self.popen: subprocess.Popen[bytes] | None = None
        self._start_time: int | None = None
        self._stopped = False

    @property
    def pid(self) -> int | None:
        """PID while started."""
        return self.popen.pid if self.popen else None

    def start(self) -> "ManagedProcess":
        """Launch the process with stdout+stderr to the log; record its PID."""
        return self._launch("wb")

    def restart(self) -> "ManagedProcess":
        """Launch the same command again after it exited, appending to its log; the record
        forgets the old PID and holds the new one."""
        if self.popen is not None:
            self.popen.poll()
            if self.record is not None:
                self.record.forget_process(self.popen.pid)
        self._stopped = False
        return self._launch("ab")

    def _launch(self, mode: str) -> "ManagedProcess":
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log, mode) as out:
            out.write(f"# {' '.join(self.argv)}\n".encode())
            out.flush()
            kwargs: dict[str, Any] = dict(stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                          env=self.env)
            try:
                argv = dying_with_parent(self.argv)
                if self.host is not None:
                    self.popen = self.host.popen(argv, **kwargs)
                else:
                    self.popen = subprocess.Popen(argv, start_new_session=True, **kwargs)
            except OSError as exc:
                raise ProcessStartError(f"{self.name}: cannot run {self.argv[0]}: {exc.strerror}") from None
        self._start_time = process_start_time(self.popen.pid)
        if self.record is not None:
            self.record.add_process(self.popen.pid, self.name, self.kind)
        return self

    def alive(self) -> bool:
        """True while the process runs."""
        return self.popen is not None and self.popen.poll() is None

    def returncode(self) -> int | None:
        """Exit code once it ended."""
        return self.popen.poll() if self.popen else None

    def output(self) -> str:
        """The whole log so far (without the command header line)."""
        try:
            text = self.log.read_text(errors="replace")
        except OSError:
            return ""
        return text.split("\n", 1)[1] if text.startswith("# ") and "\n" in text else text

    def wait_for(self, ready: Callable[[], bool], timeout: float, what: str) -> None:
        """Poll `ready()` until true; raise ProcessStartError with the log tail when the process
        exits or `timeout` seconds pass first."""
        deadline = time.monotonic() + timeout
        while not ready():
            code = self.returncode()
            if code is not None:
                raise ProcessStartError(f"{self.name} exited with code {code} before {what}; "
                                        f"last lines of {self.log}:\n{log_tail(self.log)}")
            if time.monotonic() > deadline:
                raise ProcessStartError(f"{self.name}: no {what} after {timeout:g} s; "
                                        f"last lines of {self.log}:\n{log_tail(self.log)}")
            time.sleep(0.2)

    def wait_for_line(self, pattern: str, timeout: float, what: str) -> re.Match[str]:
        """Wait until a log line matches `pattern` (regex, case-insensitive); return the match."""
        regex = re.compile(pattern, re.IGNORECASE | re.MULTILINE)
        found: list[re.Match[str]] = []

        def ready() -> bool:
            match = regex.search(self.output())
            if match:
                found.append(match)
            return bool(match)

        self.wait_for(ready, timeout, what)
        return found[0]

    def wait_exit(self, timeout: float) -> int | None:
        """Wait up to `timeout` s for the process to end; its exit code, or None if still running."""
        if self.popen is None:
            return None
        try:
            return self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self, grace: float = 3.0) -> None:
        """SIGTERM, then SIGKILL after `grace` s; forget it in the record. Idempotent."""
        if self.popen is None or self._stopped:
            return
        self._stopped = True
        if self.popen.poll() is None:
            terminate(self.popen.pid, self._start_time, grace)
        try:
            self.popen.wait(5)
        except subprocess.TimeoutExpired:
            pass
        if self.record is not None:
            self.record.forget_process(self.popen.pid)
