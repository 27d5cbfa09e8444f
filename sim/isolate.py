"""One simulation per forked child process, so that ns-3 aborting (an NS_ASSERT or NS_FATAL in
its models ends the process) fails that run, not the experiment.

The parent loads ns-3 and compiles gradlane's C++ first (`engine.cpp`): children inherit both
and start in milliseconds. A child returns its result by pipe (pickled); its stderr goes to a
file too, so the parent can name ns-3's reason when the child dies.
"""
from __future__ import annotations

import os
import pickle
import signal
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
