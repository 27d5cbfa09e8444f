"""Gradient packets flagged PLAIN (the MLT baseline's "no network assistance") cross a real
network as ordinary traffic: delivered, but no switch classifies them (zero gradient-policy
classifications in `gradctl stats`), while the same packets without the flag are classified."""
from support.topology_helpers import gradctl_json

PLAIN = "0x20"
PACKETS = 60


def _classified(session) -> int:
    stats = gradctl_json(session, "stats")
    return sum(c["seen"] for sw in stats.values() for c in sw["classes"])


def _send(t, ps_ip, *extra) -> int:
    rx = t.receiver("ps", "--idle", "1")
    t.result(t.start("w1", "send", "--dst", ps_ip, "--layers", "0,5", "--count", str(PACKETS // 2),
                     "--rate", "1000", *extra))
    return sum(row["count"] for row in t.result(rx)["layers"].values())


def test_plain_gradient_packets_are_never_classified(network, traffic):
    session = network("incast", workers=1, background=0, bottleneck_pps=2000)
    t = traffic(session)
    ps_ip = session.topo.hosts["ps"].ip
    assert _send(t, ps_ip, "--flags", PLAIN) == PACKETS
    assert _classified(session) == 0
    assert _send(t, ps_ip) == PACKETS
    assert _classified(session) == PACKETS * len(session.topo.switches)   # each switch classifies each
