"""Issue 12's mechanisms end to end, PS and workers as real processes on 127.0.0.1 (the TCP
ECN test in a network namespace of its own): deadline closes below the bound are violations,
the reliable pull delivers everything, the MLT baseline is one fixed bound with PLAIN packets,
the acceptance deadline adapts, and the TCP baseline uses the chosen congestion control and ECN."""
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from hosts import wire
from hosts.lossy_relay import LossyRelay
from topo.summary import render, violations
from topo.training import TrainingResult

ROOT = Path(__file__).resolve().parents[3]


def _job(agents, tmp_path, name, workers, rounds, flags, relay_loss=0.0, blackhole=None):
    port = agents.free_port()
    ps_log = tmp_path / f"{name}-ps.jsonl"
    ps = agents.start("hosts.ps", "--workers", str(workers), "--bind", "127.0.0.1", "--port",
                      str(port), "--log", str(ps_log), "--rounds", str(rounds), *flags)
    with LossyRelay(("127.0.0.1", 0), ("127.0.0.1", port), relay_loss, seed=7,
                    blackhole=blackhole) as relay:
        logs = [tmp_path / f"{name}-w{r}.jsonl" for r in range(workers)]
        procs = [agents.start("hosts.worker", "--rank", str(r), "--workers", str(workers), "--ps",
                              "127.0.0.1", "--ps-port", str(relay.address[1]), "--bind",
                              "127.0.0.1", "--port", "0", "--rounds", str(rounds), "--log",
                              str(logs[r]), *flags)
                 for r in range(workers)]
        rc, _, err = agents.wait(ps, 120)
        assert rc == 0, err
        for proc in procs:
            wrc, _, werr = agents.wait(proc, 30)
            assert wrc == 0, werr
    return agents.read_jsonl(ps_log), [agents.read_jsonl(p) for p in logs]


def _push_layer1_tail(data: bytes) -> bool:
    hdr = wire.header_of(data)      # control packets carry a MAC trailer after their payload
    return (hdr.kind == wire.KIND_DATA and not hdr.flags & wire.FLAG_PULL
            and hdr.layer_id == 1 and hdr.chunk_seq >= 5)


def test_mlt_deadline_close_below_the_bound_is_a_counted_logged_violation(agents, tmp_path):
    # The path swallows layer 1's push from chunk 5 on: with a bound per layer, only the
    # deadline ends each push (over the tensor the 6 lost chunks would fit a 10% bound).
    ps, workers = _job(agents, tmp_path, "mlt", 1, 3,
                       ["--transport", "mlt", "--bound", "0.1", "--bound-scope", "layer",
                        "--deadline-ms", "100"],
                       blackhole=_push_layer1_tail)
    start = next(e for e in ps if e["event"] == "start")
    assert start["push_bounds"] == start["pull_bounds"] == [0.1, 0.1]   # one fixed bound
    assert start["config"]["plain"] is True and start["config"]["push_deadline"] == "fixed 100 ms"
    rounds = [e for e in ps if e["event"] == "round"]
    assert all(r["closed_by"] == ["deadline"] and r["violations"] == [0, 1] for r in rounds)
    logged = [e for e in ps if e["event"] == "violation"]
    assert [(e["round"], e["layer"], e["stage"]) for e in logged] == [(0, 1, "push"), (1, 1, "push"), (2, 1, "push")]
    assert all(e["delivered"] < 0.9 and e["bound"] == 0.1 for e in logged)
    assert next(e for e in ps if e["event"] == "done")["violations"] == [0, 3]
    result = TrainingResult({"ps@ps": 0, "worker0@w1": 0}, {"ps@ps": ps, "worker0@w1": workers[0]},
                            {"ps@ps": "", "worker0@w1": ""}, 1.0)
    assert violations(result)["push"] == {0: 0, 1: 3}
    text = render(result, None)
    assert "bound violations: 3 (push layer 1 x3; pull 0)" in text
    assert "transport: mlt; pacing off; PLAIN (no network assistance)" in text


def test_reliable_pull_delivers_every_parameter_despite_loss(agents, tmp_path):
    ps, workers = _job(agents, tmp_path, "reliable", 2, 8, ["--reliable-pull"], relay_loss=0.1)
    assert next(e for e in ps if e["event"] == "start")["pull_bounds"] == [0.0, 0.0]
    for log in workers:
        rounds = [e for e in log if e["event"] == "round"]
        assert len(rounds) == 8
        for r in rounds:
            assert r["pull_delivered"] == [1.0, 1.0] and r["pull_closed_by"] == "complete"
            assert r["pull_deadline_ms"] is None and r["pull_violations"] == [0, 0]
    push = [e for e in ps if e["event"] == "round"]
    assert any(min(r["delivered"]) < 1.0 for r in push)       # the push still tolerated loss


def test_adaptive_deadline_follows_the_measured_rounds(agents, tmp_path):
    # ltp's default is the telemetry law, which is this formula when no switch stamps telemetry
    ps, _ = _job(agents, tmp_path, "adaptive", 2, 12, ["--deadline", "adaptive", "--deadline-ms", "5000"])
    assert next(e for e in ps if e["event"] == "start")["config"]["push_deadline"].startswith("adaptive")
    deadlines = [e["deadline_ms"] for e in ps if e["event"] == "round"]
    assert deadlines[0] == 5000.0                               # start value until a round is measured
    assert all(200.0 <= d < 5000.0 for d in deadlines[1:]), deadlines
    fixed, _ = _job(agents, tmp_path, "fixed", 2, 4, ["--deadline", "fixed", "--deadline-ms", "5000"])
    assert {e["deadline_ms"] for e in fixed if e["event"] == "round"} == {5000.0}


def _in_namespace(tmp_path, script: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run `script` (sh) in a fresh network namespace with only loopback; stopped by PID group."""
    proc = subprocess.Popen(["unshare", "--net", "sh", "-c", "ip link set lo up && " + script],
                            cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


@pytest.mark.parametrize("ecn", ["on", "off"])
def test_tcp_baseline_uses_the_chosen_cc_and_ecn_in_its_namespace(agents, tmp_path, ecn):
    # As topo does in a Mininet host: the namespace's owner sets net.ipv4.tcp_ecn, the agents
    # check it, set TCP_CONGESTION per socket and record what each connection negotiated.
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.fail("this test needs root and unshare(1) for a private network namespace")
    flags = f"--transport tcp --tcp-cc reno --tcp-ecn {ecn} --rounds 3 --job-key {agents.job_key}"
    py = sys.executable
    sysctl = "1" if ecn == "on" else "0"
    done = _in_namespace(tmp_path, (
        f"sysctl -qw net.ipv4.tcp_ecn={sysctl} && {py} -m hosts.ps --workers 1 --bind 127.0.0.1 --port 19527 --log {tmp_path}/ps.jsonl {flags} & "
        f"{py} -m hosts.worker --rank 0 --workers 1 --ps 127.0.0.1 --bind 127.0.0.1 "
        f"--log {tmp_path}/w.jsonl {flags} && wait $! && cat /proc/sys/net/ipv4/tcp_ecn"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == sysctl
    read_jsonl = agents.read_jsonl
    ps = read_jsonl(tmp_path / "ps.jsonl")
    final = next(e for e in ps if e["event"] == "done")
    assert final["ecn_setup"] == f"net.ipv4.tcp_ecn={sysctl}"
    conn = final["connections"]["0"]
    assert conn["cc"] == "reno" and conn["ecn"] is (ecn == "on")
    start = next(e for e in ps if e["event"] == "start")
    assert start["config"]["tcp_cc"] == "reno" and start["config"]["tcp_ecn"] == ecn
    worker_done = next(e for e in read_jsonl(tmp_path / "w.jsonl") if e["event"] == "done")
    assert worker_done["connection"]["cc"] == "reno" and worker_done["connection"]["ecn"] is (ecn == "on")
