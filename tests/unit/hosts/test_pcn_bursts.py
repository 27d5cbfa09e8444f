"""hosts.pcn's DDL bursts over loopback: the PS side answers every PCN-START and records each
(worker, round) burst with its packet count and arrival times; without --pcn no START is sent."""
import json
import threading
import time

import pytest

from hosts import wire
from hosts.jsonlog import JsonLog
from hosts.pcn import BurstRecorder, PcnClient, answer_start, send_bursts
from hosts.transport.endpoint import Endpoint
from hosts.transport.mux import Mux


def _ps(tmp_path):
    log_path = tmp_path / "ps.log"
    log = JsonLog(str(log_path))
    endpoint = Endpoint(("127.0.0.1", 0), 1, wire.PS_RANK)
    mux = Mux(endpoint)
    recorder = BurstRecorder(log, idle=0.2)
    mux.handlers[wire.KIND_PCN_START] = lambda pkt, now: (answer_start(endpoint, pkt), True)[1]
    mux.handlers[wire.KIND_DATA] = recorder.on_data
    stop = threading.Event()

    def loop():
        mux.run(lambda: recorder.flush(time.monotonic()) is None and stop.is_set())

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    return endpoint, recorder, stop, thread, log, log_path


def _records(path, event):
    return [json.loads(line) for line in path.read_text().splitlines() if f'"{event}"' in line]


def _run(tmp_path, pcn):
    ps, recorder, stop, thread, ps_log, ps_log_path = _ps(tmp_path)
    worker_log_path = tmp_path / "w.log"
    worker_log = JsonLog(str(worker_log_path))
    endpoint = Endpoint(("127.0.0.1", 0), 1, 3)
    client = PcnClient(Mux(endpoint), ps.address, 10, 0.5) if pcn else None
    try:
        send_bursts(endpoint, ps.address, client, worker_log, bursts=2, packets=20, rate=2000.0,
                    gap=0.3, lead=0.05, start_at=time.time() + 0.05, first_round=7)
        time.sleep(0.5)
    finally:
        stop.set()
        thread.join(5)
        recorder.flush(time.monotonic(), force=True)
        ps_log.close()
        worker_log.close()
        endpoint.close()
        ps.close()
    return ps, _records(worker_log_path, "burst_sent"), _records(ps_log_path, "burst_received")


def test_pcn_bursts_are_announced_and_recorded(tmp_path):
    ps, sent, received = _run(tmp_path, pcn=True)
    assert [s["round"] for s in sent] == [7, 8]
    assert all(s["acked"] and s["pcn"] for s in sent)
    assert ps.counters["pcn_starts"] == 2
    assert sorted((r["rank"], r["round"], r["packets"]) for r in received) == [(3, 7, 20), (3, 8, 20)]
    for s in sent:
        got = next(r for r in received if r["round"] == s["round"])
        assert s["ready_t"] <= s["first_t"] <= got["first_t"] <= got["last_t"]
        assert got["bytes"] == s["bytes"] == 20 * 1472   # MTU-sized: 1500-byte IP packets
    assert sent[1]["ready_t"] - sent[0]["ready_t"] == pytest.approx(0.3 + 20 / 2000.0, abs=1e-6)


def test_without_pcn_no_start_is_sent(tmp_path):
    ps, sent, received = _run(tmp_path, pcn=False)
    assert ps.counters["pcn_starts"] == 0
    assert all(not s["pcn"] and s["pcn_rtt_ms"] is None for s in sent)
    assert sum(r["packets"] for r in received) == 40

