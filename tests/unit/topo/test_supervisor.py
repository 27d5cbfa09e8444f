"""The supervisor restarts a process that exits unexpectedly, with backoff and a limit."""
import os
import signal
import time

import pytest

from topo.pidfile import RunRecord
from topo.processes import ManagedProcess
from topo.supervisor import Supervisor

# Stands in for the controller daemon: it says what the daemon says once it serves, then runs.
# (Quoted so that the command line the log starts with does not say it.)
SERVING = ["sh", "-c", "echo all switches 'programmed'; exec sleep 60"]


def _wait(cond, timeout=10.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.05)
    return False


def test_a_killed_process_is_restarted_with_the_same_flags_and_logged(tmp_path):
    record = RunRecord.create(tmp_path, "t")
    proc = ManagedProcess("controller", "controller", SERVING, tmp_path / "controller.log", record).start()
    sup = Supervisor([], proc, tmp_path / "supervisor.log").start()
    try:
        first = proc.pid
        assert _wait(lambda: "all switches programmed" in proc.output().splitlines())
        os.kill(first, signal.SIGKILL)
        assert sup.wait_recovered(1, 15)
        assert proc.alive() and proc.pid != first
        assert proc.argv[-len(SERVING):] == SERVING
        # the run record names the new process, not the dead one
        pids = {p.pid for p in RunRecord.load(tmp_path).processes}
        assert proc.pid in pids and first not in pids
        [fault] = sup.snapshot()
        assert fault["name"] == "controller" and fault["exit_code"] == -signal.SIGKILL
        assert fault["restarted_after_s"] >= 0.5 and fault["recovered_s"] >= fault["restarted_after_s"]
        log = (tmp_path / "supervisor.log").read_text()
        assert "controller (controller) exited unexpectedly with code -9" in log
        assert "restarted with the same flags" in log and "serving" in log
        # the log of the process is appended to, not replaced
        assert proc.log.read_text().splitlines().count("all switches programmed") == 2
    finally:
        sup.stop()
        proc.stop()


@pytest.mark.slow
def test_restarts_back_off_and_stop_at_the_limit(tmp_path):
    proc = ManagedProcess("controller", "controller", ["sh", "-c", "exit 3"], tmp_path / "c.log").start()
    sup = Supervisor([], proc, tmp_path / "supervisor.log", restart_limit=2).start()
    try:
        assert _wait(lambda: any(f["gave_up"] for f in sup.snapshot()), 20)
        faults = sup.snapshot()
        assert [f["restart"] for f in faults] == [1, 2, 3]
        assert [f["exit_code"] for f in faults] == [3, 3, 3]
        # the second restart waited twice as long as the first
        assert faults[1]["restarted_after_s"] >= 2 * 0.5 * 0.95
        assert "not restarted: it reached the restart limit (2 in 60 s)" in (tmp_path / "supervisor.log").read_text()
    finally:
        sup.stop()
        proc.stop()


def test_a_stopped_supervisor_restarts_nothing(tmp_path):
    proc = ManagedProcess("controller", "controller", SERVING, tmp_path / "c.log").start()
    sup = Supervisor([], proc, tmp_path / "supervisor.log").start()
    sup.stop()
    first = proc.pid
    proc.stop()
    time.sleep(0.5)
    assert not proc.alive() and proc.pid == first and sup.snapshot() == []
