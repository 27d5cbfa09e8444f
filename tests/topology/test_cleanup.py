"""After `topo.run` is killed with SIGKILL, `topo.stop` leaves no process and no interface."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from topo.network import root_interfaces
from topo.pidfile import RunRecord, is_same_process
from topo.topologies import TopoParams, build_topology
from support.topology_helpers import REPO


def test_stop_after_killed_run(build_dir, switch_works, tmp_path):
    log_dir = tmp_path / "logs"
    argv = [sys.executable, "-m", "topo.run", "--topo", "incast", "--build", build_dir,
            "--log-dir", str(log_dir), "--no-controller", "--workers", "2", "--background", "1"]
    out = open(tmp_path / "run.out", "w+")
    run = subprocess.Popen(argv, cwd=REPO, stdin=subprocess.PIPE, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while "In the Mininet CLI" not in Path(out.name).read_text():
            assert run.poll() is None, Path(out.name).read_text()[-2000:]
            assert time.monotonic() < deadline, "topo.run did not come up"
            time.sleep(0.3)
        record = RunRecord.load(log_dir)
        started = [p for p in record.processes if p.kind != "run"]
        assert any(p.kind == "switch" for p in started) and record.interfaces
        os.kill(run.pid, signal.SIGKILL)
        run.wait(10)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    stop = subprocess.run([sys.executable, "-m", "topo.stop", "--log-dir", str(log_dir)], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert stop.returncode == 0, stop.stderr
    time.sleep(0.5)
    alive = [p for p in started if is_same_process(p.pid, p.start_time)]
    assert alive == [], f"still running after topo.stop: {alive}"
    left = [n for n in record.interfaces if Path(f"/sys/class/net/{n}").exists()]
    assert left == [], f"interfaces left: {left}"
    assert set(record.interfaces) == set(root_interfaces(build_topology("incast", TopoParams(workers=2, background=1))))
    assert RunRecord.load(log_dir) is None
    again = subprocess.run([sys.executable, "-m", "topo.stop", "--log-dir", str(log_dir)], cwd=REPO,
                           capture_output=True, text=True, timeout=60)
    assert again.returncode == 0 and "nothing recorded" in again.stdout
