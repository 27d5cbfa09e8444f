"""PCN counts do not leak on a real network: with a 20 ms round trip (above the 12.5 ms resend
interval of a worker's PCN-START) and ACKs lost, every START is resent, yet each switch counts
it once per (job, worker, round); a round whose burst never comes is replaced by the next
round's START; after the bursts every port's count is 0 again, so the normal threshold applies. A worker's
kernel-TCP burst, which carries no gradient header, ends its START's count through the policy's
ddl_flows as gradient DATA does.
"""
import re
import sys

from controller.thrift import run_commands
from support.topology_helpers import gradctl_json, pcn_policy

# (round, burst): round 3's burst never comes (its START is replaced by round 4's)
ROUNDS = ((1, True), (2, True), (3, False), (4, True))
WORKERS = ("w1", "w2")


def _pcn_counts(session) -> dict[tuple[str, int], int]:
    out = {}
    for name, sw in session.topo.switches.items():
        ports = sorted(session.topo.ports(name))
        text = run_commands(sw.thrift_port, [f"register_read GradEgress.pcn_count {p}" for p in ports], name)
        values = [int(v) for v in re.findall(r"pcn_count\[\d+\]\s*=\s*(\d+)", text)]
        assert len(values) == len(ports), text
        out.update({(name, p): v for p, v in zip(ports, values)})
    return out


def test_pcn_counts_return_to_zero_with_resent_starts(network, traffic, tmp_path):
    session = network("pcn", policy=pcn_policy(tmp_path / "pcn.yaml"), workers=2, bottleneck_pps=2000,
                      delay_ms=10)
    t = traffic(session)
    topo = session.topo
    ps_ip = topo.hosts["ps"].ip
    starts_sent = 0
    for round_, burst in ROUNDS:
        rx = t.receiver("ps", "--idle", "1", "--max-wait", "3", "--pcn-ack", "--pcn-ack-skip", "1")
        senders = [t.start(w, "send", "--dst", ps_ip, "--rank", str(rank), "--round", str(round_),
                           "--count", "20" if burst else "0", "--rate", "1000", "--pcn",
                           "--pcn-threshold", "5", "--pcn-resend-ms", "12.5", "--pcn-tries", "80")
                   for rank, w in enumerate(WORKERS, 1)]
        for proc in senders:
            report = t.result(proc)
            assert report.get("pcn_ack"), f"no PCN-ACK: {report}"
            starts_sent += report["pcn_starts"]
        got = t.result(rx)
        if burst:
            assert sum(row["count"] for row in got["layers"].values()) == 20 * len(WORKERS), got
    assert starts_sent >= 2 * len(WORKERS) * len(ROUNDS)   # every START was sent at least twice

    counts = _pcn_counts(session)
    assert counts and all(v == 0 for v in counts.values()), counts

    rows = {(r["switch"], r["peer"]): r for r in gradctl_json(session, "pcn", "show")}
    # l1 -> r1 carries w1's STARTs and bursts; r1 -> ps those of both workers
    uplink, to_ps = rows[("l1", "r1")], rows[("r1", "ps")]
    assert (uplink["starts"], uplink["arrivals"]) == (len(ROUNDS), 3), uplink
    assert (to_ps["starts"], to_ps["arrivals"]) == (len(ROUNDS) * 2, 3 * 2), to_ps


def test_a_tcp_burst_named_by_ddl_flows_is_its_starts_arrival(network, traffic, tmp_path):
    flows = "    ddl_flows:\n      - {worker_rank: 0, src: 10.0.2.1, protocol: tcp, dst_ports: 5002}\n"
    session = network("pcn", policy=pcn_policy(tmp_path / "pcn.yaml", flows), workers=2,
                      bottleneck_pps=2000)
    t = traffic(session)
    assert session.topo.hosts["w1"].ip == "10.0.2.1"
    ps = t.command("ps", sys.executable, "-u", "-m", "hosts.pcn", "serve", "--tcp-port", "5002")
    ps.wait_for_line(r'"listening"', 20, "PCN server listening")
    bursts = t.command("w1", sys.executable, "-u", "-m", "hosts.pcn", "bursts", "--ps",
                       session.topo.hosts["ps"].ip, "--transport", "tcp", "--bytes", "200000",
                       "--bursts", "2", "--period-s", "1", "--pcn", "--lead-ms", "300", "--rank", "0")
    assert bursts.wait_exit(30) == 0, bursts.output()[-1500:]
    sent = [line for line in bursts.output().splitlines() if '"burst_sent"' in line]
    assert len(sent) == 2 and all('"acked":true' in line for line in sent), sent
    rows = {(r["switch"], r["peer"]): r for r in gradctl_json(session, "pcn", "show")}
    uplink = rows[("l1", "r1")]
    assert (uplink["starts"], uplink["arrivals"], uplink["expired"]) == (2, 2, 0), uplink
    counts = _pcn_counts(session)
    assert all(v == 0 for v in counts.values()), counts
