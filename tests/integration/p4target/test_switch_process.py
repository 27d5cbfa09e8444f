"""The switch process on real links: two network namespaces wired by veth to
`python -m p4target switch` running an L3 router; frames built with Scapy are sent from
inside the namespaces. Checks forwarding, pcaps, injected loss and delay, clean stop."""
import statistics
import struct
import time

from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from p4target.switch.pcap import read_pcap
from support.switch_probes import is_probe, probe, program_file, receive, routes


def test_forwarding_and_pcaps(two_hosts, start_switch, open_ns_socket, tmp_path):
    h1, h2 = two_hosts
    pcaps = tmp_path / "pcap"
    sw = start_switch(["-i", f"1@{h1.switch_iface}", "-i", f"2@{h2.switch_iface}", "--thrift-port", "0",
                       "--pcap", str(pcaps), "--log-file", str(tmp_path / "sw.log"), "-L", "debug",
                       program_file(tmp_path)])
    routes(sw)
    s1, s2 = open_ns_socket(h1.ns, h1.iface), open_ns_socket(h2.ns, h2.iface)
    try:
        for i in range(20):
            s1.send(probe(i))
            time.sleep(0.002)
        got = receive(s2, 20)
        for i in range(5):
            s2.send(probe(100 + i, dst="10.0.1.1", src="10.0.2.2"))
        back = receive(s1, 5)
    finally:
        s1.close()
        s2.close()
    assert len(got) == 20 and len(back) == 5
    pkt = Ether(got[0][1])
    assert pkt.dst == "00:00:00:00:02:02" and pkt[IP].ttl == 31
    assert [struct.unpack("!I", bytes(Ether(d)[UDP].payload)[:4])[0] for _, d in got] == list(range(20))
    assert Ether(back[0][1]).dst == "00:00:00:00:01:01"
    assert sw.stop() == 0
    s1_in = [r for r in read_pcap(str(pcaps / f"{h1.switch_iface}_in.pcap")) if is_probe(r.data)]
    s2_out = [r for r in read_pcap(str(pcaps / f"{h2.switch_iface}_out.pcap")) if is_probe(r.data)]
    s2_in = [r for r in read_pcap(str(pcaps / f"{h2.switch_iface}_in.pcap")) if is_probe(r.data)]
    assert len(s1_in) == 20 and len(s2_out) == 20
    assert len(s2_in) == 5  # only what h2 sent: the switch's own output is not re-received
    log = (tmp_path / "sw.log").read_text()
    assert "Processing packet received on port 1" in log and "Transmitting packet of size" in log
    assert "thrift standard.bm_mt_add_entry" in log


def test_injected_loss(two_hosts, start_switch, open_ns_socket, tmp_path):
    h1, h2 = two_hosts
    sw = start_switch(["-i", f"1@{h1.switch_iface}", "-i", f"2@{h2.switch_iface}", "--thrift-port", "0",
                       "--impair", "2:loss=0.5", program_file(tmp_path)])
    routes(sw)
    s1, s2 = open_ns_socket(h1.ns, h1.iface), open_ns_socket(h2.ns, h2.iface)
    try:
        for i in range(300):
            s1.send(probe(i))
            time.sleep(0.001)
        got = receive(s2, 300)
        for i in range(20):  # the reverse direction has no impairment
            s2.send(probe(i, dst="10.0.1.1", src="10.0.2.2"))
            time.sleep(0.001)
        back = receive(s1, 20)
    finally:
        s1.close()
        s2.close()
    assert 90 <= len(got) <= 210  # binomial(300, 0.5): mean 150, sd 8.7
    assert len(back) == 20
    assert sw.stop() == 0


def one_way_delays(s1, s2, count: int) -> list[float]:
    delays = []
    for i in range(count):
        sent = time.monotonic()
        s1.send(probe(i))
        got = receive(s2, 1, quiet=2.0)
        assert got, f"probe {i} lost"
        delays.append(got[0][0] - sent)
    return delays


def test_injected_delay_and_jitter(two_hosts, start_switch, open_ns_socket, tmp_path):
    h1, h2 = two_hosts
    args = ["-i", f"1@{h1.switch_iface}", "-i", f"2@{h2.switch_iface}", "--thrift-port", "0",
            program_file(tmp_path)]
    s1, s2 = open_ns_socket(h1.ns, h1.iface), open_ns_socket(h2.ns, h2.iface)
    try:
        plain = start_switch(args)
        routes(plain)
        baseline = one_way_delays(s1, s2, 10)
        assert plain.stop() == 0
        delayed = start_switch(["--impair", "2:delay=120ms,jitter=10ms", *args])
        routes(delayed)
        held = one_way_delays(s1, s2, 10)
        assert delayed.stop() == 0
    finally:
        s1.close()
        s2.close()
    assert min(held) >= 0.110 - 0.002
    assert statistics.median(held) - statistics.median(baseline) >= 0.100
