"""The switch's own counters: `<log>.stats.json` (rewritten while it runs, final at exit) and
the exit log line, found next to `--log-file` or next to the file stdout is redirected to."""
import json
import os
import signal
import subprocess
import sys
import time

from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from p4target.switch.pcap import PcapWriter
from p4target.switch.stats_file import StatsFile, stats_path

from support.switch_process import free_tcp_port

from .test_cli import forwarding_program, write_json

PY = sys.executable


def _inputs(tmp_path, count: int) -> None:
    with PcapWriter(str(tmp_path / "in1_in.pcap")) as w:
        for i in range(count):
            w.write(bytes(Ether() / IP(dst=f"10.0.2.{i}") / UDP() / b"x"), timestamp=10 + i * 0.001)
    PcapWriter(str(tmp_path / "in2_in.pcap")).close()


def _run_until(proc: subprocess.Popen, path, text: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and text in path.read_text():
            return
        assert proc.poll() is None, f"switch exited early: {path.read_text() if path.exists() else ''}"
        time.sleep(0.05)
    raise AssertionError(f"{text!r} never appeared in {path}")


def _stop(proc: subprocess.Popen) -> int:
    if proc.poll() is not None:
        return proc.returncode
    os.kill(proc.pid, signal.SIGTERM)
    try:
        return proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        raise


def test_log_file_gets_a_stats_file_and_an_exit_line(tmp_path):
    _inputs(tmp_path, 4)
    log = tmp_path / "s1.log"
    argv = [PY, "-m", "p4target", "switch", "-i", "1@in1", "-i", "2@in2", "--use-files", "0",
            "--thrift-port", "0", "--log-file", str(log), write_json(tmp_path, forwarding_program()),
            "--", "--grpc-server-addr", f"127.0.0.1:{free_tcp_port()}"]
    proc = subprocess.Popen(argv, cwd=str(tmp_path), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _run_until(proc, log, "all 4 input packet(s) processed")
        stats_file = tmp_path / "s1.log.stats.json"
        deadline = time.monotonic() + 10
        while not stats_file.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert stats_file.exists()  # written while the switch runs
    finally:
        assert _stop(proc) == 0
    stats = json.loads(stats_file.read_text())
    assert stats["rx_drops_total"] == 0 and stats["internal_drops"] == 0
    assert stats["ports"]["1"]["received"] == 4 and stats["ports"]["2"]["transmitted"] == 4
    assert "receive drops (socket buffer overflows): 0" in log.read_text()


def test_redirected_stdout_gets_the_stats_file_beside_it(tmp_path):
    _inputs(tmp_path, 2)
    log = tmp_path / "s2.log"
    argv = [PY, "-m", "p4target", "switch", "-i", "1@in1", "-i", "2@in2", "--use-files", "0",
            "--thrift-port", "0", "--log-console", write_json(tmp_path, forwarding_program()),
            "--", "--grpc-server-addr", f"127.0.0.1:{free_tcp_port()}"]
    with open(log, "wb") as out:  # as topo runs switches: console log redirected to a file
        proc = subprocess.Popen(argv, cwd=str(tmp_path), stdout=out, stderr=subprocess.STDOUT)
    try:
        _run_until(proc, log, "all 2 input packet(s) processed")
    finally:
        assert _stop(proc) == 0
    stats = json.loads((tmp_path / "s2.log.stats.json").read_text())
    assert stats["ports"]["2"]["transmitted"] == 2 and stats["rx_drops_total"] == 0


def test_stats_path_without_a_log_file_or_redirect_is_none(tmp_path):
    assert stats_path(str(tmp_path / "x.log")) == str(tmp_path / "x.log.stats.json")
    r = subprocess.run([PY, "-c", "from p4target.switch.stats_file import stats_path; print(stats_path(None))"],
                       capture_output=True, text=True, check=True)  # stdout is a pipe here
    assert r.stdout.strip() == "None"


def test_stats_file_replaces_the_file_whole(tmp_path):
    path = tmp_path / "a.stats.json"
    calls = []

    def collect():
        calls.append(1)
        return {"rx_drops_total": len(calls)}

    sf = StatsFile(str(path), collect, interval=0.02)
    sf.start()
    deadline = time.monotonic() + 5
    while len(calls) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    final = sf.stop()
    assert json.loads(path.read_text()) == final and final["rx_drops_total"] >= 3
    assert not (tmp_path / "a.stats.json.tmp").exists()


def test_stats_file_is_written_at_start_over_an_earlier_switchs_copy(tmp_path):
    # A run's first snapshot is taken right after the switch started: a copy an earlier switch
    # left there (its final figures) must already be replaced.
    path = tmp_path / "s1.log.stats.json"
    path.write_text(json.dumps({"queue_tail_drops": 3005}))
    sf = StatsFile(str(path), lambda: {"queue_tail_drops": 0}, interval=60)
    sf.start()
    try:
        assert json.loads(path.read_text()) == {"queue_tail_drops": 0}
    finally:
        sf.stop()
