"""Simulations in forked child processes, so that ns-3 aborting (an NS_ASSERT or NS_FATAL in
its models ends the process) fails that run, not the experiment.

The parent loads ns-3 and compiles gradlane's C++ first (`engine.cpp`): children inherit both
and start in milliseconds. A child returns its result by pipe (pickled); its stderr goes to a
file too, so the parent can name ns-3's reason when the child dies.

`call` forks one child per call. A :class:`Runner` keeps one child for a sequence of calls (an
experiment's runs): cppyy generates the Python wrappers of the ns-3 calls a simulation makes the
first time they are made, in the process making them, so a fresh child spends seconds on them
before its first packet (measured: a 2-round regime-map cell took 26 s in a fresh child, 3 s in
one whose parent had made the same calls). A Runner's child is replaced after a crash or an
error, so a run never starts in a process a failed run left behind.
"""
from __future__ import annotations

import os
import pickle
import signal
import struct
import sys
import tempfile
from dataclasses import dataclass
from typing import Any, Callable

from sim import engine
from sim.errors import SimError

# ns-3's own last words start so (a crash handler's backtrace follows them)
REASON_PREFIXES = ("NS_ASSERT", "NS_FATAL", "terminate called", "msg=")


@dataclass
class Crash:
    """A child that ended without a result: how, and ns-3's last words."""

    how: str
    reason: str

    def message(self) -> str:
        return f"ns-3 ended the simulation ({self.how})" + (f": {self.reason}" if self.reason else "")


def _reason(stderr_text: str) -> str:
    for line in stderr_text.splitlines():
        if line.strip().startswith(REASON_PREFIXES):
            return line.strip()[:300]
    return ""


def call(fn: Callable[..., Any], *args: Any) -> Any:
    """`fn(*args)` in a forked child: its return value, the SimError it raised (raised again
    here), or a :class:`Crash` when ns-3 ended the child."""
    engine.cpp()
    sys.stdout.flush()
    sys.stderr.flush()
    with tempfile.TemporaryFile() as errors:
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:                                    # the child
            os.close(read_end)
            os.dup2(errors.fileno(), 2)
            os.environ["CPPYY_CRASH_QUIET"] = "1"      # no gdb backtrace from cppyy's handler
            try:
                payload = pickle.dumps(("ok", fn(*args)))
            except SimError as exc:
                payload = pickle.dumps(("sim_error", str(exc)))
            except BaseException as exc:                # noqa: BLE001 (reported to the parent)
                payload = pickle.dumps(("error", f"{type(exc).__name__}: {exc}"))
            with os.fdopen(write_end, "wb") as out:
                out.write(payload)
            os._exit(0)
        os.close(write_end)
        with os.fdopen(read_end, "rb") as pipe:
            data = pipe.read()
        _, status = os.waitpid(pid, 0)
        errors.seek(0)
        text = errors.read().decode(errors="replace")
    if data:
        sys.stderr.write(text)
        kind, value = pickle.loads(data)
        if kind == "ok":
            return value
        if kind == "sim_error":
            raise SimError(value)
        return Crash(how="exception in the child", reason=value)
    if os.WIFSIGNALED(status):
        how = f"signal {signal.Signals(os.WTERMSIG(status)).name}"
    else:
        how = f"exit status {os.WEXITSTATUS(status)}"
    return Crash(how=how, reason=_reason(text))


_LENGTH = struct.Struct("!Q")


def _send(fd: int, data: bytes) -> None:
    os.write(fd, _LENGTH.pack(len(data)))
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _recv(fd: int) -> bytes | None:
    """One message, or None at end of file."""
    head = _read_exactly(fd, _LENGTH.size)
    return None if head is None else _read_exactly(fd, _LENGTH.unpack(head)[0])


def _read_exactly(fd: int, size: int) -> bytes | None:
    parts, left = [], size
    while left:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            return None
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


def _serve(requests: int, answers: int) -> None:
    """The child of a Runner: run each pickled (fn, args) it is sent until end of file."""
    while True:
        request = _recv(requests)
        if request is None:
            os._exit(0)
        try:
            fn, args = pickle.loads(request)
            payload = pickle.dumps(("ok", fn(*args)))
        except SimError as exc:
            payload = pickle.dumps(("sim_error", str(exc)))
        except BaseException as exc:                    # noqa: BLE001 (reported to the parent)
            payload = pickle.dumps(("error", f"{type(exc).__name__}: {exc}"))
        _send(answers, payload)


class Runner:
    """Calls run one after another in one forked child kept between them (see the module's
    docstring); use as a context manager, which ends the child by its PID. A call whose function
    cannot be pickled (a closure) runs in a child of its own, as `call` does."""

    def __init__(self) -> None:
        self._pid: int | None = None
        self._requests = -1                # write end: the child's requests
        self._answers = -1                 # read end: its answers
        self._errors: Any = None           # the child's stderr, a file the parent reads back
        self._busy = False

    def __enter__(self) -> "Runner":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _start(self) -> None:
        engine.cpp()
        sys.stdout.flush()
        sys.stderr.flush()
        errors = tempfile.TemporaryFile()
        req_r, req_w = os.pipe()
        ans_r, ans_w = os.pipe()
        pid = os.fork()
        if pid == 0:                                    # the child
            try:
                os.close(req_w)
                os.close(ans_r)
                os.dup2(errors.fileno(), 2)
                os.environ["CPPYY_CRASH_QUIET"] = "1"  # no gdb backtrace from cppyy's handler
                _serve(req_r, ans_w)
            finally:
                os._exit(1)
        os.close(req_r)
        os.close(ans_w)
        self._pid, self._requests, self._answers, self._errors = pid, req_w, ans_r, errors

    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """`fn(*args)` in the child: as :func:`call`."""
        try:
            request = pickle.dumps((fn, args))
        except (pickle.PicklingError, AttributeError, TypeError):
            return call(fn, *args)
        if self._pid is None:
            self._start()
        start = self._errors.seek(0, os.SEEK_END)
        self._busy = True
        try:
            _send(self._requests, request)
            data = _recv(self._answers)
        except BrokenPipeError:
            data = None
        self._busy = False
        self._errors.seek(start)
        text = self._errors.read().decode(errors="replace")
        if data is None:                                # the child ended mid-run
            _, status = os.waitpid(self._pid, 0)
            self._forget()
            how = (f"signal {signal.Signals(os.WTERMSIG(status)).name}" if os.WIFSIGNALED(status)
                   else f"exit status {os.WEXITSTATUS(status)}")
            return Crash(how=how, reason=_reason(text))
        sys.stderr.write(text)
        kind, value = pickle.loads(data)
        if kind == "ok":
            return value
        self.close()                                    # the next run starts in a fresh child
        if kind == "sim_error":
            raise SimError(value)
        return Crash(how="exception in the child", reason=value)

    def close(self) -> None:
        """End the child (by its PID: killed when a call was cut short, else told to exit)."""
        if self._pid is None:
            return
        if self._busy:
            os.kill(self._pid, signal.SIGKILL)
        os.close(self._requests)                        # end of file: the child exits
        self._requests = -1
        os.waitpid(self._pid, 0)
        self._forget()

    def _forget(self) -> None:
        for fd in (self._requests, self._answers):
            if fd >= 0:
                os.close(fd)
        if self._errors is not None:
            self._errors.close()
        self._pid, self._requests, self._answers, self._errors, self._busy = None, -1, -1, None, False
