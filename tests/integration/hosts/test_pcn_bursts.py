"""hosts.pcn's DDL bursts over loopback (hosts/ddl_bursts.py): a fixed number of bytes per burst
over kernel TCP or gradlane's UDP sender, each timed until every byte is acknowledged; the PS
answers every PCN-START, receives gradlane bursts in full and records each (worker, round) of
gradient DATA; without PCN no START is sent."""
import json
import socket
import threading
import time

import pytest

from hosts import wire
from hosts.ddl_bursts import (BurstReceivers, BurstTransport, GradlaneBurstSender, TcpBurstSender,
                              burst_plan, run_bursts, tcp_sink, unacked_bytes)
from hosts.jsonlog import JsonLog
from hosts.pcn import BurstRecorder, PcnClient, answer_start
from hosts.transport.endpoint import Endpoint
from hosts.transport.mux import Mux

BYTES = 100_000


class PS:
    """The PS side of hosts.pcn serve in a thread: PCN answers, gradlane receivers, recorder,
    TCP sink."""

    def __init__(self, tmp_path, ranks):
        self.log_path = tmp_path / "ps.log"
        self.log = JsonLog(str(self.log_path))
        self.endpoint = Endpoint(("127.0.0.1", 0), 1, wire.PS_RANK)
        self.mux = Mux(self.endpoint)
        self.recorder = BurstRecorder(self.log, idle=0.2)
        self.receivers = BurstReceivers(self.mux, BYTES, ranks)
        self.mux.handlers[wire.KIND_PCN_START] = lambda pkt, now: (answer_start(self.endpoint, pkt), True)[1]

        def on_data(pkt, now):
            self.recorder.on_data(pkt, now)
            self.receivers.on_data(pkt, now)
            return False

        self.mux.handlers[wire.KIND_DATA] = on_data
        self.stop = threading.Event()
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        self.tcp_port = probe.getsockname()[1]
        probe.close()
        tcp_sink(("127.0.0.1", self.tcp_port), self.log, self.stop)
        self.thread = threading.Thread(target=self.mux.run, args=(self._done,), daemon=True)
        self.thread.start()

    def _done(self):
        self.recorder.flush(time.monotonic())
        return self.stop.is_set()

    def close(self):
        self.stop.set()
        self.thread.join(5)
        self.recorder.flush(time.monotonic(), force=True)
        self.log.close()
        self.endpoint.close()

    def records(self, event):
        return [json.loads(line) for line in self.log_path.read_text().splitlines() if f'"{event}"' in line]


def _records(path, event):
    return [json.loads(line) for line in path.read_text().splitlines() if f'"{event}"' in line]


def _wait_for(condition, timeout=10.0):
    """Poll `condition` until it holds; fail after `timeout` s."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting for the PS"
        time.sleep(0.01)


def _run(tmp_path, transport, pcn, rank=3):
    ps = PS(tmp_path, [rank])
    log_path = tmp_path / "w.log"
    log = JsonLog(str(log_path))
    endpoint = Endpoint(("127.0.0.1", 0), 1, rank)
    mux = Mux(endpoint)
    client = PcnClient(mux, ps.endpoint.address, 10, 0.5) if pcn else None
    tcp = None
    try:
        if transport == "tcp":
            tcp = TcpBurstSender(socket.create_connection(("127.0.0.1", ps.tcp_port), timeout=5))

            def send(round_):
                return tcp.send(BYTES, 10.0)
        else:
            sender = GradlaneBurstSender(mux, ps.endpoint.address, BurstTransport("gradlane"))

            def send(round_):
                return sender.send(BYTES, round_, 10.0)
        run_bursts(send, client.handshake if client else None, log, rank, bursts=2, nbytes=BYTES,
                   period=0.4, lead=0.05, start_at=time.time() + 0.1, first_round=7)
        if tcp is not None:
            assert unacked_bytes(tcp.sock) == 0
            tcp.sock.close()
            # the sink logs the flow once it sees the close (the recorder is flushed by close())
            _wait_for(lambda: _records(ps.log_path, "flow_end"))
    finally:
        ps.close()
        log.close()
        endpoint.close()
    return ps, _records(log_path, "burst_sent")


@pytest.mark.parametrize("transport", ["tcp", "gradlane"])
def test_bursts_are_announced_and_timed_until_acknowledged(tmp_path, transport):
    ps, sent = _run(tmp_path, transport, pcn=True)
    assert [s["round"] for s in sent] == [7, 8]
    assert all(s["acked"] and s["pcn"] and s["bytes"] == BYTES for s in sent)
    assert ps.endpoint.counters["pcn_starts"] == 2
    for s in sent:
        assert s["ready_t"] <= s["first_t"] < s["done_t"]
        assert s["completion_s"] == pytest.approx(s["done_t"] - s["ready_t"])
    assert sent[1]["ready_t"] - sent[0]["ready_t"] == pytest.approx(0.4, abs=1e-6)
    if transport == "tcp":   # per burst, not per connection: loopback loses nothing
        assert [s["retransmissions"] for s in sent] == [0, 0]
    if transport == "gradlane":
        # every chunk of every round arrived: the receiver said STOP "complete"
        assert all(s["closed_by"] == "complete" for s in sent)
        assert all(s["data_packets"] >= burst_plan(BYTES).total_chunks for s in sent)
        got = ps.records("burst_received")
        assert sorted((r["round"], r["packets"]) for r in got) == [
            (7, burst_plan(BYTES).total_chunks), (8, burst_plan(BYTES).total_chunks)]


def test_tcp_sink_counts_every_byte(tmp_path):
    _run(tmp_path, "tcp", pcn=False)
    ends = _records(tmp_path / "ps.log", "flow_end")
    assert [e["bytes"] for e in ends] == [2 * BYTES]


def test_without_pcn_no_start_is_sent(tmp_path):
    ps, sent = _run(tmp_path, "gradlane", pcn=False)
    assert ps.endpoint.counters["pcn_starts"] == 0
    assert all(not s["pcn"] and s["pcn_rtt_ms"] is None for s in sent)


def test_a_slow_worker_finishes_its_round_after_a_fast_one_started_the_next(tmp_path):
    ps = PS(tmp_path, [0, 1])
    logs, threads, endpoints = [], [], []

    def worker(rank, start_at):
        log_path = tmp_path / f"w{rank}.log"
        log = JsonLog(str(log_path))
        endpoint = Endpoint(("127.0.0.1", 0), 1, rank)
        endpoints.append(endpoint)
        sender = GradlaneBurstSender(Mux(endpoint), ps.endpoint.address, BurstTransport("gradlane"))
        run_bursts(lambda r: sender.send(BYTES, r, 10.0), None, log, rank, bursts=2, nbytes=BYTES,
                   period=0.01, lead=0.0, start_at=start_at, first_round=7)
        log.close()
        logs.append(log_path)

    now = time.time()
    try:
        for rank, delay in ((0, 0.05), (1, 0.4)):     # rank 0 is in round 8 before rank 1 starts 7
            threads.append(threading.Thread(target=worker, args=(rank, now + delay)))
            threads[-1].start()
        for t in threads:
            t.join(30)
    finally:
        ps.close()
        for e in endpoints:
            e.close()
    sent = [r for p in logs for r in _records(p, "burst_sent")]
    assert sorted((s["rank"], s["round"], s["closed_by"]) for s in sent) == [
        (0, 7, "complete"), (0, 8, "complete"), (1, 7, "complete"), (1, 8, "complete")]
