"""Background TCP flows on loopback: a flow whose sends block for longer than its timeout (a
starved flow in RTO backoff behind a priority queue) keeps going until its duration."""
import json
import socket
import threading
import time

from hosts.background import flows
from hosts.jsonlog import JsonLog


def test_a_flow_blocked_longer_than_its_timeout_keeps_sending_until_the_end(tmp_path):
    lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lsock.bind(("127.0.0.1", 0))
    lsock.listen(1)
    received = []

    def stalled_sink() -> None:
        conn, _ = lsock.accept()
        time.sleep(2.3)     # read nothing for the whole flow: its sends block (timeout 0.2 s)
        total = 0
        with conn:
            while data := conn.recv(65536):
                total += len(data)
        received.append(total)

    sink = threading.Thread(target=stalled_sink, daemon=True)
    sink.start()
    log = JsonLog(str(tmp_path / "flows.jsonl"))
    t0 = time.monotonic()
    try:
        flows(lsock.getsockname(), 1, 2.0, "", log, timeout=0.2)
    finally:
        log.close()
        sink.join(10)
        lsock.close()
    elapsed = time.monotonic() - t0
    events = [json.loads(line) for line in (tmp_path / "flows.jsonl").read_text().splitlines()]
    flow = [e for e in events if e["event"] == "flow"]
    assert elapsed >= 1.9, f"the flow ended after {elapsed:.2f} s, before its 2 s duration"
    assert len(flow) == 1 and flow[0]["bytes"] > 0
    assert received and received[0] == flow[0]["bytes"]
