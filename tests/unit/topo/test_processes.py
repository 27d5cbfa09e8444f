"""ManagedProcess launch: death signal without a preexec_fn, clear error for a missing program."""
from __future__ import annotations

import signal
import sys

import pytest

from topo.errors import ProcessStartError
from topo.processes import ManagedProcess
from topo.processes import dying_with_parent


def test_started_process_gets_sigterm_death_signal_and_keeps_its_pid(tmp_path):
    probe = ("import ctypes, os, sys; v = ctypes.c_int(); "
             "ctypes.CDLL(None).prctl(2, ctypes.byref(v), 0, 0, 0); "  # PR_GET_PDEATHSIG
             "print(os.getpid(), v.value, flush=True)")
    proc = ManagedProcess("probe", "test", [sys.executable, "-c", probe], tmp_path / "probe.log").start()
    try:
        assert proc.wait_exit(20) == 0
        pid, sig = proc.output().split()
        assert int(pid) == proc.pid
        assert int(sig) == signal.SIGTERM
    finally:
        proc.stop()


def test_missing_program_is_a_one_line_start_error(tmp_path):
    proc = ManagedProcess("ghost", "test", ["/nonexistent/agent"], tmp_path / "ghost.log")
    with pytest.raises(ProcessStartError, match=r"^ghost: cannot run /nonexistent/agent: no such executable$"):
        proc.start()
    assert proc.pid is None


def test_prefix_keeps_the_command_intact():
    argv = dying_with_parent([sys.executable, "-c", "pass"])
    assert argv[-3:] == [sys.executable, "-c", "pass"]


