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


def test_launches_survive_a_live_grpc_client_in_the_parent(tmp_path):
    """Regression: a Popen preexec_fn forced fork(), whose gRPC (>= 1.81) child handler then
    crashed some children (EBADF in its poller after close_fds). 1-2 in 100 died that way."""
    from concurrent import futures

    import grpc

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    try:
        grpc.channel_ready_future(channel).result(timeout=10)
        failures = []
        for i in range(100):
            proc = ManagedProcess(f"p{i}", "test", [sys.executable, "-c", "pass"], tmp_path / f"p{i}.log").start()
            code = proc.wait_exit(20)
            proc.stop()
            if code != 0 or proc.output().strip():
                failures.append((i, code, proc.output()[:200]))
        assert failures == []
    finally:
        channel.close()
        server.stop(None)
