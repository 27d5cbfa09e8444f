"""The daemon and gradctl end to end over gRPC (gradctl's arguments and one-line errors alone:
tests/unit/controller/test_gradctl.py)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from google.protobuf import text_format

from controller import api, errors
from controller import p4names as N
from controller.gradctl import main
from controller.p4info import P4Info
from support.controller_topologies import diamond
from support.p4runtime_server import TestP4RuntimeServer

REPO = Path(__file__).resolve().parents[3]


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def network(tmp_path, p4info_msg):
    """Four test switches, their topology file, P4Info and BMv2 JSON files."""
    servers = {f"s{i}": TestP4RuntimeServer().start() for i in range(1, 5)}
    topo = tmp_path / "diamond.topology.json"
    topo.write_text(json.dumps(diamond({n: s.address for n, s in servers.items()})))
    p4info = tmp_path / "gradlane.p4info.txtpb"
    p4info.write_text(text_format.MessageToString(p4info_msg))
    bmv2 = tmp_path / "gradlane.json"
    bmv2.write_text('{"program": "test"}')
    yield {"servers": servers, "topology": topo, "p4info": p4info, "p4info_msg": p4info_msg, "bmv2": bmv2,
           "dir": tmp_path}
    for s in servers.values():
        s.stop()


def start_daemon(net, *extra):
    sock = net["dir"] / "ctl.sock"
    pid_file = net["dir"] / "ctl.pid"
    proc = subprocess.Popen(
        [sys.executable, "-m", "controller.daemon", "--topology", str(net["topology"]),
         "--p4info", str(net["p4info"]), "--bmv2-json", str(net["bmv2"]), "--listen", str(sock),
         "--pid-file", str(pid_file), "--state-file", str(net["dir"] / "state.json"),
         "--no-queues", "--plaintext", *extra],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while not (api.ping(sock) or {}).get("ready"):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"daemon did not come up: {proc.communicate()}")
        time.sleep(0.1)
    return proc, sock, pid_file


def stop_daemon(proc):
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
    proc.communicate()


def test_daemon_and_gradctl_end_to_end(network, capsys):
    proc, sock, pid_file = start_daemon(network, "--policy", "controller/policies/default.yaml")
    try:
        assert pid_file.read_text().strip() == str(proc.pid)
        s = ["--socket", str(sock)]
        code, out, _ = run(capsys, *s, "--json", "switches")
        assert code == 0 and [r["pipeline_loaded"] for r in json.loads(out)] == [True] * 4
        code, out, _ = run(capsys, *s, "switches")
        assert out.splitlines()[0].split() == ["SWITCH", "ADDRESS", "REACHABLE", "PRIMARY", "PIPELINE",
                                          "RESTARTS", "CRASH->PROGRAMMED", "ERROR"]

        code, out, _ = run(capsys, *s, "--json", "policy", "show")
        classes = json.loads(out)["classes"]
        assert [(c["layers"], c["loss_bound"]) for c in classes] == [
            ([0, 3], 0.1), ([4, 65535], 0.05), ([4, 65535], 0.0)]

        code, out, _ = run(capsys, *s, "policy", "set", "--job", "1", "--layers", "0-3",
                           "--loss-bound", "0.2", "--priority", "7")
        assert code == 0 and out.splitlines()[0] == "s1: 0 inserted, 1 modified, 0 deleted"
        class_entries = network["servers"]["s2"].entities("table_entry")
        info = P4Info(network["p4info_msg"])
        class_table = info.table_id("GradIngress.gradient_class")
        push_bound = info.param("GradIngress.set_class", "push_bound_bp").id
        bounds = sorted(int.from_bytes(p.value, "big") for e in class_entries if e.table_entry.table_id == class_table
                        for p in e.table_entry.action.action.params if p.param_id == push_bound)
        assert bounds == [0, 500, 2000]   # the new 2000 bp, the others unchanged

        code, _, err = run(capsys, *s, "policy", "set", "--job", "1", "--layers", "2-5", "--loss-bound", "0.1")
        assert code == 1 and err.startswith("gradctl: error: jobs[0].layers[3]: overlaps jobs[0].layers[0]")

        # counters: 1000 seen, 30 dropped in slot 0 on s1 -> 3 % against a 5 % bound
        s1 = network["servers"]["s1"]
        s1.set_counter_sizes_from_p4info()
        ids = {c.preamble.name: c.preamble.id for c in s1.p4info.counters}
        s1.counters[(ids[N.SLOT_SEEN_CTR], 0)] = (1000, 64000)
        s1.counters[(ids[N.SLOT_DROPPED_CTR], 0)] = (30, 1920)
        s1.counters[(ids[N.QUEUE_TX_CTR], N.queue_index(2, 7))] = (970, 0)
        code, out, _ = run(capsys, *s, "--json", "stats", "--switch", "s1")
        st = json.loads(out)["s1"]
        row = st["classes"][0]
        assert (row["seen"], row["dropped"], row["loss"], row["bound"], row["within_bound"]) == \
            (1000, 30, 0.03, 0.2, True)
        assert {"port": 2, "prio": 7, "tx": 970, "dropped": 0, "marked": 0} in st["queues"]
        code, out, _ = run(capsys, *s, "stats", "--switch", "s1")
        assert "3.00%" in out and "5.00%" in out

        code, out, _ = run(capsys, *s, "pcn", "set", "--switch", "s1", "--port", "2", "--threshold", "5")
        assert (code, out) == (0, "s1 port 2: normal 40, pcn 5\n")
        code, out, _ = run(capsys, *s, "--json", "pcn", "show")
        rows = {(r["switch"], r["port"]): r for r in json.loads(out)}
        assert (rows[("s1", 2)]["normal"], rows[("s1", 2)]["pcn"]) == (40, 5)
        code, _, err = run(capsys, *s, "pcn", "set", "--switch", "s1", "--port", "9", "--threshold", "5")
        assert code == 1 and err == "gradctl: error: switch s1 has no port 9 (ports: 1, 2, 3, 4)\n"

        # a second controller must not take over while the daemon runs
        code, _, err = run(capsys, *s, "--direct", "--topology", str(network["topology"]),
                           "--p4info", str(network["p4info"]), "switches")
        assert code == 1 and "drop --direct so the two do not fight" in err
    finally:
        stop_daemon(proc)
    assert not pid_file.exists() and not sock.exists()


def test_direct_mode_without_daemon(network, capsys, monkeypatch):
    monkeypatch.chdir(network["dir"])
    args = ["--socket", str(network["dir"] / "none.sock"), "--direct", "--plaintext",
            "--topology", str(network["topology"]), "--p4info", str(network["p4info"]),
            "--bmv2-json", str(network["bmv2"])]
    code, out, err = run(capsys, *args, "policy", "apply", str(REPO / "controller/policies/default.yaml"))
    assert code == 0, err
    assert out.splitlines()[0] == "s1: 3 inserted, 0 modified, 0 deleted"
    code, out, _ = run(capsys, *args, "--json", "policy", "show")
    assert len(json.loads(out)["classes"]) == 3      # state persisted under logs/
    assert (network["dir"] / "logs" / "diamond.controller.json").exists()


def test_json_after_the_command_and_long_socket_paths(network, capsys):
    deep = network["dir"] / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    net = dict(network, dir=deep)
    proc, sock, _ = start_daemon(net)
    try:
        assert len(str(sock)) > 108
        code, out, err = run(capsys, "--socket", str(sock), "switches", "--json")
        assert code == 0, err
        assert [r["switch"] for r in json.loads(out)] == ["s1", "s2", "s3", "s4"]
    finally:
        stop_daemon(proc)


def test_daemon_once_and_bad_inputs(network, tmp_path):
    base = [sys.executable, "-m", "controller.daemon", "--topology", str(network["topology"]),
            "--p4info", str(network["p4info"]), "--bmv2-json", str(network["bmv2"]), "--no-queues",
            "--state-file", str(tmp_path / "state.json"), "--plaintext"]
    done = subprocess.run(base + ["--once"], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "all switches programmed" in done.stderr
    bad = tmp_path / "bad.yaml"
    bad.write_text("jobs:\n  - job: 1\n    layers:\n      - {range: [0, 3], loss_bound: 0.1, priority: 11}\n")
    done = subprocess.run(base + ["--once", "--policy", str(bad)], cwd=REPO, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr == f"controller: error: {bad}: jobs[0].layers[0].priority: must be in [0, 7], got 11\n"
    network["servers"]["s3"].stop()
    done = subprocess.run(base + ["--once", "--timeout", "0.5"], cwd=REPO, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 1 and "switches not programmed: s3" in done.stderr
    done = subprocess.run(base[:5] + ["--p4info", str(tmp_path / "nope.txt"), "--bmv2-json", "x", "--once"],
                          cwd=REPO, capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stderr) == (2, f"controller: error: cannot read P4Info {tmp_path / 'nope.txt'}: no such file\n")
    done = subprocess.run(base[:5] + ["--once"], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "--p4info" in done.stderr


def test_direct_mode_writes_nothing_unasked(network, capsys, monkeypatch):
    monkeypatch.chdir(network["dir"])
    proc, sock, _ = start_daemon(network, "--policy", str(REPO / "controller/policies/default.yaml"))
    stop_daemon(proc)                       # the daemon is gone; the switches keep their state
    before = {n: len(s.entities("table_entry")) for n, s in network["servers"].items()}
    args = ["--socket", str(sock), "--direct", "--plaintext", "--topology", str(network["topology"]),
            "--p4info", str(network["p4info"])]
    code, out, err = run(capsys, *args, "--json", "stats", "--switch", "s2")
    assert code == 0, err
    assert json.loads(out)["s2"]["reachable"] is True
    assert {n: len(s.entities("table_entry")) for n, s in network["servers"].items()} == before
    code, _, err = run(capsys, *args, "policy", "set", "--job", "1", "--layers", "0-3", "--loss-bound", "0.2")
    assert code == 1 and "no controller state at logs/diamond.controller.json" in err
    code, out, err = run(capsys, *args, "--state-file", str(network["dir"] / "state.json"),
                         "policy", "set", "--job", "1", "--layers", "0-3", "--loss-bound", "0.2")
    assert code == 0, err
    assert out.splitlines()[0] == "s1: 0 inserted, 1 modified, 0 deleted"


def test_api_rejects_malformed_requests(network):
    import socket as socketlib
    proc, sock, _ = start_daemon(network)
    try:
        for raw, message in [(b"not json\n", "request is not JSON"),
                             (b'{"args": {}}\n', "request must be"),
                             (b'{"cmd": "reboot"}\n', "unknown command 'reboot'"),
                             (b'{"cmd": "pcn.set", "args": {"switch": "s1"}}\n', "pcn.set: missing argument 'port'")]:
            with socketlib.socket(socketlib.AF_UNIX, socketlib.SOCK_STREAM) as s:
                s.connect(str(sock))
                s.sendall(raw)
                answer = json.loads(s.makefile().readline())
            assert answer["ok"] is False and answer["error"].startswith(message)
        with pytest.raises(errors.RemoteError, match="unknown switch 's9'") as info:
            api.call(sock, "stats", {"switch": "s9"})
        assert info.value.kind == "ConfigError"
    finally:
        stop_daemon(proc)


def test_job_switches_set_shown_and_installed(network, capsys):
    proc, sock, _ = start_daemon(network, "--policy", "controller/policies/default.yaml")
    try:
        s = ["--socket", str(sock)]
        code, out, err = run(capsys, *s, "policy", "set", "--job", "1", "--spray", "no", "--selective-drop", "no")
        assert code == 0, err
        assert out.splitlines()[0] == "s1: 1 inserted, 0 modified, 0 deleted"
        tables = {t.preamble.name: t.preamble.id for t in network["servers"]["s1"].p4info.tables}
        entries = [e.table_entry for e in network["servers"]["s3"].entities("table_entry")
                   if e.table_entry.table_id == tables[N.JOB_FEATURES_TABLE]]
        assert len(entries) == 1 and entries[0].match[0].exact.value == b"\x01"
        # param ids: 1 spray, 2 priority, 3 selective_drop
        assert {p.param_id: p.value for p in entries[0].action.action.params} == \
            {1: b"\x00", 2: b"\x01", 3: b"\x00"}
        code, out, _ = run(capsys, *s, "--json", "policy", "show")
        assert json.loads(out)["jobs"] == [{"job": 1, "name": "default", "spray": False,
                                            "prioritize": True, "selective_drop": False}]
        code, out, _ = run(capsys, *s, "policy", "show")
        header = next(line for line in out.splitlines() if "SPRAY" in line)
        assert header.split() == ["JOB", "NAME", "SPRAY", "PRIORITIZE", "SELECTIVE-DROP"]
        assert out.splitlines()[-1].split() == ["1", "default", "off", "on", "off"]
        # all back on: the entry goes (no entry = every mechanism on)
        code, out, _ = run(capsys, *s, "policy", "set", "--job", "1", "--spray", "yes", "--selective-drop", "yes")
        assert code == 0 and out.splitlines()[0] == "s1: 0 inserted, 0 modified, 1 deleted"
        code, _, err = run(capsys, *s, "policy", "set", "--job", "5", "--prioritize", "no")
        assert code == 1 and "no job 5 in the current policy" in err
    finally:
        stop_daemon(proc)


def test_stats_count_push_and_pull_against_their_own_bounds(network, capsys):
    proc, sock, _ = start_daemon(network, "--policy", "controller/policies/default.yaml")
    try:
        s1 = network["servers"]["s1"]
        s1.set_counter_sizes_from_p4info()
        ids = {c.preamble.name: c.preamble.id for c in s1.p4info.counters}
        # slot 0: layers 0-3, push bound 10 %, pull bound 2.5 %
        s1.counters[(ids[N.SLOT_SEEN_CTR], 0)] = (3000, 0)
        s1.counters[(ids[N.SLOT_DROPPED_CTR], 0)] = (20, 0)
        s1.counters[(ids[N.STAGE_SEEN_CTR], N.stage_index(0, False))] = (2000, 0)
        s1.counters[(ids[N.STAGE_DROPPED_CTR], N.stage_index(0, False))] = (10, 0)
        s1.counters[(ids[N.STAGE_SEEN_CTR], N.stage_index(0, True))] = (1000, 0)
        s1.counters[(ids[N.STAGE_DROPPED_CTR], N.stage_index(0, True))] = (30, 0)
        code, out, _ = run(capsys, "--socket", str(sock), "--json", "stats", "--switch", "s1")
        row = json.loads(out)["s1"]["classes"][0]
        assert row["push"] == {"seen": 2000, "dropped": 10, "loss": 0.005, "bound": 0.1, "within_bound": True}
        assert row["pull"] == {"seen": 1000, "dropped": 30, "loss": 0.03, "bound": 0.025, "within_bound": False}
        assert row["within_bound"] is False   # 1.3 % in all is under 10 %, but the pull stage is over
        code, out, _ = run(capsys, "--socket", str(sock), "stats", "--switch", "s1")
        assert "10/2000 (10.00%)" in out and "30/1000 (2.50%)" in out and "OVER" in out
    finally:
        stop_daemon(proc)


# -- the PCN threshold law inside the daemon (docs/control-laws.md) ---------------------------
TWO_JOBS = {"version": 1, "jobs": [
    {"job": 1, "name": "first", "pcn": {"threshold": 15, "adapt": True, "floor": 5, "ceiling": 40},
     "layers": [{"range": [0, 65535], "loss_bound": 0.05}]},
    {"job": 2, "name": "second", "early_close": "adaptive",
     "pcn": {"threshold": 20, "adapt": False},
     "layers": [{"range": [0, 65535], "loss_bound": 0.01}]},
]}


def _pcn_entries(server, info: P4Info) -> dict[int, int]:
    table = info.table_id(N.PCN_JOB_TABLE)
    out = {}
    for e in server.entities("table_entry"):
        if e.table_entry.table_id == table:
            job = int.from_bytes(e.table_entry.match[0].exact.value, "big")
            out[job] = int.from_bytes(e.table_entry.action.action.params[0].value, "big")
    return out


def test_deep_queues_of_one_job_lower_only_its_threshold(network, capsys, tmp_path):
    policy = tmp_path / "two.yaml"
    policy.write_text(yaml.safe_dump(TWO_JOBS))
    proc, sock, _ = start_daemon(network, "--policy", str(policy), "--adapt-interval", "0")
    try:
        s = ["--socket", str(sock)]
        info = P4Info(network["p4info_msg"])
        assert _pcn_entries(network["servers"]["s2"], info) == {1: 15, 2: 20}
        code, out, _ = run(capsys, *s, "--json", "policy", "show")
        slots = {c["job"]: c["slot"] for c in json.loads(out)["classes"]}
        servers = network["servers"]
        for sv in servers.values():
            sv.set_counter_sizes_from_p4info()
        ids = {c.preamble.name: c.preamble.id for c in servers["s1"].p4info.counters}

        def counters(seen: int, congested: int, job: int = 1) -> None:
            servers["s1"].counters[(ids[N.SLOT_SEEN_CTR], slots[job])] = (seen, 0)
            servers["s1"].counters[(ids[N.SLOT_CONGESTED_CTR], slots[job])] = (congested, 0)

        counters(1000, 0)
        counters(1000, 900, job=2)               # job 2's law is off: its entry never moves
        code, out, _ = run(capsys, *s, "pcn", "adapt")
        assert code == 0 and out.strip() == "no change"          # first reading: a baseline
        counters(1200, 100)                      # 50 % of job 1's new packets met a deep queue
        counters(1200, 1100, job=2)
        code, out, _ = run(capsys, *s, "--json", "pcn", "adapt")
        changes = json.loads(out)
        assert [(c["job"], c["previous"], c["value"]) for c in changes] == [(1, 15, 10)]
        assert changes[0]["seen"] == 200 and changes[0]["congested"] == 100
        assert _pcn_entries(servers["s3"], info) == {1: 10, 2: 20}
        code, out, _ = run(capsys, *s, "--json", "pcn", "jobs")
        rows = {r["job"]: r for r in json.loads(out)}
        assert rows[1]["threshold"] == 10 and rows[1]["adapt"] is True
        assert rows[1]["last_adaptation"]["reason"].startswith("lowered")
        assert rows[2]["threshold"] == 20 and rows[2]["last_adaptation"] is None
        code, out, _ = run(capsys, *s, "pcn", "jobs")
        assert "15 -> 10: lowered" in out and out.splitlines()[0].split()[:4] == \
            ["JOB", "NAME", "THRESHOLD", "LAW"]
        # three calm steps raise it by one step again
        for seen in (1400, 1600, 1800):
            counters(seen, 100)
            run(capsys, *s, "pcn", "adapt")
        assert _pcn_entries(servers["s1"], info)[1] == 15
        state = json.loads((network["dir"] / "state.json").read_text())
        assert state["pcn_thresholds"] == {"1": 15} and len(state["adaptations"]) == 2
        # a new policy for the job restarts its law from the policy's threshold
        changed = json.loads(json.dumps(TWO_JOBS))
        changed["jobs"][0]["pcn"]["threshold"] = 25
        policy.write_text(yaml.safe_dump(changed))
        code, _, err = run(capsys, *s, "policy", "apply", str(policy))
        assert code == 0, err
        assert _pcn_entries(servers["s2"], info) == {1: 25, 2: 20}
    finally:
        stop_daemon(proc)


