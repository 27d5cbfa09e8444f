"""Spraying: one job's gradient packets leave the leaf over both spines; a TCP flow uses one.

iperf3 opens a control connection beside its data connection; each connection (5-tuple) is
checked on its own.
"""
import time
from pathlib import Path

from support.topology_helpers import pcap_counts

COUNT = 300


def test_gradients_sprayed_tcp_pinned(network, traffic):
    session = network("leafspine", pcap=True, workers=2, background=0, bottleneck_pps=2000)
    topo = session.topo
    assert topo.hosts["w1"].switch == "l1" and topo.hosts["ps"].switch == "l2"
    uplinks = [f"l1-eth{port}" for port, peer in sorted(topo.ports("l1").items()) if peer.startswith("sp")]
    assert len(uplinks) == 2
    ps_ip = topo.hosts["ps"].ip
    t = traffic(session)
    rx = t.receiver("ps", "--idle", "2")
    t.result(t.start("w1", "send", "--dst", ps_ip, "--layers", "0", "--count", str(COUNT), "--rate", "500"))
    assert t.result(rx)["layers"]["0"]["count"] == COUNT
    t.tcp_server("ps", 5201)
    client = t.command("w1", "iperf3", "-c", ps_ip, "-p", "5201", "-t", "2", "-b", "800K")
    assert client.wait_exit(30) == 0, client.output()[-800:]
    time.sleep(0.5)  # last frames reach the pcap files
    pcap_dir = Path(session.config.pcap_dir)
    counts = [pcap_counts(pcap_dir, name) for name in uplinks]
    grads = [c["gradient"] for c in counts]
    flows: dict[tuple, dict[str, int]] = {}
    for name, c in zip(uplinks, counts):
        for key, n in c["tcp_flows"].items():
            flows.setdefault(key, {})[name] = n
    assert sum(grads) == COUNT
    assert min(grads) >= 0.25 * COUNT, f"gradients not sprayed over both spines: {dict(zip(uplinks, grads))}"
    data_flow = max(flows.values(), key=lambda per_link: sum(per_link.values()))
    assert sum(data_flow.values()) > 50, f"the TCP transfer hardly crossed the uplinks: {flows}"
    split = {key: per_link for key, per_link in flows.items() if len(per_link) > 1}
    assert not split, f"TCP connection(s) split over both spines: {split}"
