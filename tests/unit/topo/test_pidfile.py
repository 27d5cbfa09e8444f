"""The run record and `topo.stop`: processes stopped by PID, recycled PIDs left alone."""
import subprocess
import sys

from topo.pidfile import RunRecord, is_same_process, process_start_time
from topo.stop import main as stop_main
from topo.stop import stop_recorded


def _sleeper():
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])


def test_record_survives_reload(tmp_path):
    record = RunRecord.create(tmp_path, "incast")
    record.add_interfaces(["s1-eth1", "s1-eth2"])
    loaded = RunRecord.load(tmp_path)
    assert loaded.topology == "incast" and loaded.interfaces == ["s1-eth1", "s1-eth2"]
    assert loaded.processes[0].kind == "run" and loaded.processes[0].start_time is not None


def test_stop_kills_recorded_processes_and_is_idempotent(tmp_path, capsys):
    procs = [_sleeper(), _sleeper()]
    try:
        record = RunRecord(tmp_path / "run.pids.json", "incast")
        for i, proc in enumerate(procs):
            record.add_process(proc.pid, f"agent{i}", "agent")
        report = stop_recorded(tmp_path)
        assert len(report.stopped) == 2
        for proc in procs:
            assert proc.wait(5) is not None
        assert RunRecord.load(tmp_path) is None
        assert stop_main(["--log-dir", str(tmp_path)]) == 0
        assert "nothing recorded" in capsys.readouterr().out
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def test_recycled_pid_is_not_signalled(tmp_path):
    proc = _sleeper()
    try:
        record = RunRecord(tmp_path / "run.pids.json", "incast")
        record.add_process(proc.pid, "agent", "agent")
        record.processes[0].start_time -= 1  # pretend the PID now belongs to another process
        record.save()
        assert stop_recorded(tmp_path).stopped == []
        assert proc.poll() is None
    finally:
        proc.kill()
        proc.wait()


def test_process_identity():
    proc = _sleeper()
    start = process_start_time(proc.pid)
    assert is_same_process(proc.pid, start)
    proc.kill()
    proc.wait()
    assert not is_same_process(proc.pid, start)


def test_stop_deletes_recorded_interfaces(tmp_path):
    subprocess.run(["ip", "link", "add", "gltst0", "type", "veth", "peer", "name", "gltst1"], check=True)
    try:
        record = RunRecord(tmp_path / "run.pids.json", "incast")
        record.add_interfaces(["gltst0", "absent0"])
        assert stop_recorded(tmp_path).interfaces == ["gltst0"]
        assert subprocess.run(["ip", "link", "show", "gltst1"], capture_output=True).returncode != 0
    finally:
        subprocess.run(["ip", "link", "del", "gltst0"], capture_output=True)
