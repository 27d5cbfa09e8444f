"""PCN handshake (TOS bits on the wire), PCN inside training, and the background traffic agents."""
import socket
import time

from hosts import wire


def test_pcn_handshake_between_processes_carries_tos_bits(agents, tmp_path):
    port = agents.free_port()
    serve_log = tmp_path / "serve.jsonl"
    serve = agents.start("hosts.pcn", "serve", "--bind", "127.0.0.1", "--port", str(port),
                         "--log", str(serve_log))
    end = time.monotonic() + 30
    while time.monotonic() < end and "listening" not in (
            serve_log.read_text() if serve_log.exists() else ""):
        time.sleep(0.05)
    log = tmp_path / "pcn.jsonl"
    start = agents.start("hosts.pcn", "start", "--ps", "127.0.0.1", "--ps-port", str(port),
                         "--bind", "127.0.0.1", "--count", "3", "--interval-ms", "10",
                         "--timeout-ms", "3000", "--log", str(log))
    rc, _, err = agents.wait(start, 60)
    assert rc == 0, err
    events = [e for e in agents.read_jsonl(log) if e["event"] == "pcn"]
    assert [e["acked"] for e in events] == [True] * 3
    assert all(wire.decode_pcn_tos(e["tos"])[:3] == (True, False, 10) for e in events)
    # the answer carries the ACK bit in its TOS byte
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.bind(("127.0.0.1", 0))
        probe.setsockopt(socket.IPPROTO_IP, socket.IP_RECVTOS, 1)
        probe.settimeout(5)
        probe.sendto(wire.pack_header(wire.KIND_PCN_START, 0, 1, 0, 0, 9), ("127.0.0.1", port))
        data, anc, _, _ = probe.recvmsg(2048, socket.CMSG_SPACE(1))
        hdr = wire.unpack_header(data)
        assert hdr.kind == wire.KIND_PCN_ACK and hdr.round == 9
        tos = [d[0] for _, kind, d in anc if kind == socket.IP_TOS][0]
        assert wire.decode_pcn_tos(tos)[:2] == (False, True)
    finally:
        probe.close()
    assert serve.poll() is None


def test_training_with_pcn_handshakes_every_round(agents, tmp_path):
    port = agents.free_port()
    ps_log, w_log = tmp_path / "ps.jsonl", tmp_path / "w0.jsonl"
    ps = agents.start("hosts.ps", "--workers", "1", "--bind", "127.0.0.1", "--port", str(port),
                      "--rounds", "10", "--pcn", "--log", str(ps_log))
    w = agents.start("hosts.worker", "--rank", "0", "--workers", "1", "--ps", "127.0.0.1",
                     "--ps-port", str(port), "--bind", "127.0.0.1", "--port", "0", "--pcn",
                     "--pcn-timeout-ms", "2000", "--log", str(w_log))
    assert agents.wait(ps, 90)[0] == 0
    assert agents.wait(w, 30)[0] == 0
    rounds = [e for e in agents.read_jsonl(w_log) if e["event"] == "round"]
    assert len(rounds) == 10
    assert sum(r["pcn_rtt_ms"] is not None for r in rounds) >= 9
    done = [e for e in agents.read_jsonl(ps_log) if e["event"] == "done"][0]
    assert done["counters"]["pcn_starts"] >= 10


def test_background_sink_flows_incast_microburst(agents, tmp_path):
    port = agents.free_port()
    sink_log = tmp_path / "sink.jsonl"
    pid_file = tmp_path / "sink.pid"
    sink = agents.start("hosts.background", "sink", "--bind", "127.0.0.1", "--port", str(port),
                        "--log", str(sink_log), "--pid-file", str(pid_file))
    end = time.monotonic() + 30
    while not pid_file.exists() and time.monotonic() < end:
        time.sleep(0.05)
    flows_log, incast_log, burst_log = (tmp_path / f"{n}.jsonl" for n in ("flows", "incast", "burst"))
    flows = agents.start("hosts.background", "flows", "--dst", "127.0.0.1", "--port", str(port),
                         "--flows", "2", "--duration", "0.5", "--log", str(flows_log))
    assert agents.wait(flows, 60)[0] == 0
    incast = agents.start("hosts.background", "incast", "--dst", "127.0.0.1", "--port", str(port),
                          "--flows", "4", "--bytes", "200000", "--repeat", "2", "--gap-ms", "50",
                          "--log", str(incast_log))
    assert agents.wait(incast, 60)[0] == 0
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rx.bind(("127.0.0.1", 0))
    rx.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
    burst = agents.start("hosts.background", "microburst", "--dst", "127.0.0.1", "--port",
                         str(rx.getsockname()[1]), "--burst", "50", "--count", "2",
                         "--interval-ms", "10", "--size", "200", "--log", str(burst_log))
    assert agents.wait(burst, 60)[0] == 0
    rx.settimeout(1)
    got = 0
    try:
        while True:
            got += len(rx.recv(2048)) == 200
    except socket.timeout:
        pass
    rx.close()
    assert got == 100
    flow_events = [e for e in agents.read_jsonl(flows_log) if e["event"] == "flow"]
    assert len(flow_events) == 2 and all(e["bytes"] > 0 for e in flow_events)
    cc = {e.get("cc") for e in flow_events}
    fallback = [e for e in agents.read_jsonl(flows_log) if e["event"] == "congestion_control_fallback"]
    assert cc == {"dctcp"} or (fallback and cc == {fallback[0]["using"]})
    incasts = [e for e in agents.read_jsonl(incast_log) if e["event"] == "incast"]
    assert len(incasts) == 2 and all(e["completion_s"] > 0 for e in incasts)
    agents.stop_all()
    assert sink.returncode == 0
    assert not pid_file.exists()
    ends = [e for e in agents.read_jsonl(sink_log) if e["event"] == "flow_end"]
    assert sum(e["bytes"] == 200000 for e in ends) == 8
