"""`python -m p4target switch` as a process: start-up lines, clean SIGTERM/SIGINT shutdown,
--use-files end to end, log lines, and one-line errors for bad input."""
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from p4target.engine.sample_programs import l3_router
from p4target.switch.pcap import PcapWriter, read_pcap
from support.switch_process import SwitchProcess as Switch

PY = sys.executable


def forwarding_program() -> dict:
    """l3_router whose table default forwards every IPv4 packet to port 2 (no control plane needed)."""
    prog = l3_router()
    table = prog["pipelines"][0]["tables"][1]
    table["default_entry"] = {"action_id": 2, "action_const": False,
                              "action_data": ["0x000000000202", "0x2"], "action_entry_const": False}
    return prog


def write_json(tmp_path, prog=None) -> str:
    path = tmp_path / "prog.json"
    path.write_text(json.dumps(prog or l3_router()))
    return str(path)


def run_error(args, cwd=None) -> tuple[int, str]:
    r = subprocess.run([PY, "-m", "p4target", "switch", *args], capture_output=True, text=True, timeout=60, cwd=cwd)
    return r.returncode, r.stderr


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_starts_announces_and_stops_cleanly(tmp_path, sig):
    log = tmp_path / "s.log"
    sw = Switch(["--no-p4", "--thrift-port", "0", "--log-file", str(log), "--device-id", "4"])
    try:
        port = sw.thrift_port()
        sw.wait_for("switch ready")
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass  # Thrift is really listening
        grpc_line = sw.wait_for("P4Runtime")
        if "listening" in grpc_line:
            host, grpc_port = sw.grpc_addr.split(":")
            with socket.create_connection((host, int(grpc_port)), timeout=5):
                pass
    finally:
        rc = sw.stop(sig)
    assert rc == 0
    text = log.read_text()
    assert f"Thrift server listening on port {port}" in text
    assert "device_id 4" in text and "switch stopped" in text
    assert "[p4target] [I]" in text


def test_use_files_forwards_and_writes_output_pcaps(tmp_path):
    frames = [bytes(Ether(dst="00:00:00:00:00:01") / IP(dst=f"10.0.2.{i}", ttl=9) / UDP() / b"x") for i in range(3)]
    with PcapWriter(str(tmp_path / "in1_in.pcap")) as w:
        for i, f in enumerate(frames):
            w.write(f, timestamp=100 + i * 0.01)
    PcapWriter(str(tmp_path / "in2_in.pcap")).close()
    prog = write_json(tmp_path, forwarding_program())
    sw = Switch(["-i", "1@in1", "-i", "2@in2", "--use-files", "0", "--thrift-port", "0",
                 "--log-console", "-L", "debug", prog], cwd=str(tmp_path))
    try:
        sw.wait_for("all 3 input packet(s) processed")
        deadline = time.monotonic() + 10
        out = []
        while time.monotonic() < deadline and len(out) < 3:
            out = list(read_pcap(str(tmp_path / "in2_out.pcap")))
            time.sleep(0.05)
    finally:
        assert sw.stop() == 0
    assert [Ether(r.data)[IP].dst for r in out] == ["10.0.2.0", "10.0.2.1", "10.0.2.2"]
    assert all(Ether(r.data)[IP].ttl == 8 and Ether(r.data).dst == "00:00:00:00:02:02" for r in out)
    assert list(read_pcap(str(tmp_path / "in1_out.pcap"))) == []
    log = "".join(sw.lines)
    assert "Processing packet received on port 1" in log and "Transmitting packet of size" in log


def test_p4c_stf_runner_invocation_with_fifo_inputs(tmp_path):
    """simple_switch as p4c's run-bmv2-test.py starts it: its flags (`-i` glued to its value in
    one argument, --log-flush, --dump-packet-data), input FIFOs the runner opens after the start
    and fills while the switch runs, outputs read after SIGTERM."""
    for p in (1, 2):
        os.mkfifo(tmp_path / f"pcap{p}_in.pcap")
    prog = write_json(tmp_path, forwarding_program())
    sw = Switch(["--log-file", "switch.log", "--log-flush", "--use-files", "0", "--dump-packet-data", "10240",
                 "--thrift-port", "0", "--device-id", "5", "-i 1@pcap1", "-i 2@pcap2", prog], cwd=str(tmp_path))
    writers: dict = {}
    runner = threading.Thread(target=lambda: writers.update(
        {p: PcapWriter(str(tmp_path / f"pcap{p}_in.pcap")) for p in (1, 2)}), daemon=True)
    runner.start()
    try:
        runner.join(timeout=30)
        assert len(writers) == 2, "the switch did not open its input FIFOs"
        sw.wait_ready()
        for i in range(3):
            writers[1].write(bytes(Ether(dst="00:00:00:00:00:01") / IP(dst=f"10.0.2.{i}", ttl=9) / UDP() / b"x"))
        for w in writers.values():
            w.close()
        deadline = time.monotonic() + 10
        out: list = []
        while time.monotonic() < deadline and len(out) < 3:
            out = list(read_pcap(str(tmp_path / "pcap2_out.pcap")))
            time.sleep(0.05)
    finally:
        for w in writers.values():
            w.close()
        rc = sw.stop()
    assert rc == 0
    assert [Ether(r.data)[IP].dst for r in out] == ["10.0.2.0", "10.0.2.1", "10.0.2.2"]
    assert (tmp_path / "switch.log").read_text().count("Adding interface") == 2


def test_thrift_cli_talks_to_the_process(tmp_path):
    sw = Switch(["--thrift-port", "0", write_json(tmp_path)])
    try:
        port = sw.thrift_port()
        r = subprocess.run([os.path.join(os.path.dirname(PY), "simple_switch_CLI"), "--thrift-port", str(port)],
                           input="table_add MyIngress.ipv4_lpm MyIngress.drop 10.1.0.0/16 =>\n"
                                 "table_num_entries MyIngress.ipv4_lpm\n",
                           capture_output=True, text=True, timeout=60)
    finally:
        assert sw.stop() == 0
    assert "Entry has been added with handle 0" in r.stdout
    assert "RuntimeCmd: 1" in r.stdout


def one_line_error(rc: int, err: str, expected_rc: int, fragment: str) -> None:
    assert rc == expected_rc, err
    assert err.count("\n") == 1 and err.startswith("p4target switch: error: "), err
    assert fragment in err and "Traceback" not in err


def test_missing_interface_is_one_line_error(tmp_path):
    rc, err = run_error(["-i", "1@gl-nosuch9", "--thrift-port", "0", write_json(tmp_path)])
    one_line_error(rc, err, 1, "interface 'gl-nosuch9' (port 1) does not exist")


def test_bad_json_is_one_line_error(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    rc, err = run_error(["--thrift-port", "0", str(bad)])
    one_line_error(rc, err, 1, "is not valid JSON")
    rc, err = run_error(["--thrift-port", "0", str(tmp_path / "absent.json")])
    one_line_error(rc, err, 1, "cannot read JSON file")
    bad.write_text('{"parsers": 3}')
    rc, err = run_error(["--thrift-port", "0", str(bad)])
    one_line_error(rc, err, 1, "cannot load")


def test_thrift_port_in_use_is_one_line_error():
    holder = socket.socket()
    holder.bind(("0.0.0.0", 0))
    holder.listen()
    try:
        rc, err = run_error(["--no-p4", "--thrift-port", str(holder.getsockname()[1])])
    finally:
        holder.close()
    one_line_error(rc, err, 1, "already in use")


def test_bad_flag_is_usage_error():
    rc, err = run_error(["--no-p4", "--thrift-port", "x"])
    one_line_error(rc, err, 2, "--thrift-port")


def test_missing_use_files_input_is_one_line_error(tmp_path):
    rc, err = run_error(["-i", "1@nofile", "--use-files", "0", "--no-p4", "--thrift-port", "0"], cwd=str(tmp_path))
    one_line_error(rc, err, 1, "nofile_in.pcap")


def test_grpc_port_in_use_is_one_line_error():
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    addr = f"127.0.0.1:{holder.getsockname()[1]}"
    try:
        rc, err = run_error(["--no-p4", "--thrift-port", "0", "--", "--grpc-server-addr", addr])
    finally:
        holder.close()
    one_line_error(rc, err, 1, addr)


def test_default_grpc_address_taken_leaves_a_plain_simple_switch_running():
    """Started as simple_switch (no --grpc-server-addr), as p4c's STF runner starts several at
    once: the default P4Runtime address being taken is not fatal; Thrift still serves."""
    holder = socket.socket(socket.AF_INET6)
    try:
        holder.bind(("::", 9559))  # what gRPC takes for 0.0.0.0:9559
        holder.listen()
    except OSError:
        pass  # another process holds it already: the same situation
    sw = Switch(["--no-p4", "--thrift-port", "0", "--", "--cpu-port", "64"])
    try:
        line = sw.wait_for("P4Runtime")
        sw.wait_ready()
        with socket.create_connection(("127.0.0.1", sw.thrift_port()), timeout=5):
            pass
    finally:
        holder.close()
        assert sw.stop() == 0
    assert "P4Runtime server unavailable" in line and "9559" in line


def test_help_lists_the_flags():
    r = subprocess.run([PY, "-m", "p4target", "switch", "--help"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0
    for flag in ("--interface", "--pcap", "--use-files", "--thrift-port", "--impair", "--grpc-server-addr",
                 "--cpu-port", "--priority-queues"):
        assert flag in r.stdout


def test_start_up_rate_burst_is_applied_and_lifted_on_time(tmp_path):
    PcapWriter(str(tmp_path / "in1_in.pcap")).close()
    PcapWriter(str(tmp_path / "in2_in.pcap")).close()
    sw = Switch(["-i", "1@in1", "-i", "2@in2", "--use-files", "0", "--thrift-port", "0", "--log-console",
                 "--port-rate", "2:500", "--impair", "2:loss=0.1,rateburst=0.3s+0.4s@40", write_json(tmp_path)],
                cwd=str(tmp_path))
    try:
        sw.wait_for("switch ready")
        began = time.monotonic()
        sw.wait_for("port 2: egress rate 40 packets/s")
        burst_line = next(i for i, line in enumerate(sw.lines) if "egress rate 40 packets/s" in line)
        while not any("egress rate 500 packets/s" in line for line in sw.lines[burst_line:]):
            line = sw._new.get(timeout=5)  # back to --port-rate after the burst
            assert line is not None, sw.lines
            sw.lines.append(line)
        lifted = time.monotonic() - began
        r = subprocess.run([PY, "-m", "p4target.switch.impair", "--thrift-port", str(sw.thrift_port()), "2"],
                           capture_output=True, text=True, timeout=60)
    finally:
        assert sw.stop() == 0
    assert lifted < 5
    assert r.returncode == 0 and r.stdout == ("port 2: impairment delay=0ms,jitter=0ms,loss=0.1,"
                                              "rateburst=0.3s+400ms@40; rate 500 packets/s\n")
    rates = [line.split("egress rate ")[1].strip() for line in sw.lines if "port 2: egress rate" in line]
    assert rates == ["500 packets/s", "40 packets/s", "500 packets/s"]
