"""Bounded selective drop: only eligible packets are dropped, never past the bound, and the
switch's counters agree with what the parameter server received."""
from support.topology_helpers import budget_policy, classes, gradctl_json, selective_drops

BOUND = 0.2
PER_LAYER = 200


def test_only_eligible_dropped_within_bound(network, traffic, tmp_path):
    policy = budget_policy(tmp_path / "budget.yaml", BOUND)
    session = network("incast", policy=policy, workers=2, background=0, bottleneck_pps=400, queue_depth=1000)
    ps_ip = session.topo.hosts["ps"].ip
    t = traffic(session)
    rx = t.receiver("ps", "--idle", "3")
    senders = [t.start(w, "send", "--dst", ps_ip, "--layers", "0,10", "--count", str(PER_LAYER),
                       "--rate", "500", "--rank", str(rank)) for rank, w in enumerate(("w1", "w2"))]
    for s in senders:
        t.result(s)
    layers = t.result(rx)["layers"]
    sent = 2 * PER_LAYER
    got_eligible, got_protected = layers["0"]["count"], layers["10"]["count"]
    assert got_protected == sent, "a non-eligible packet was lost"
    lost = sent - got_eligible
    assert 0 < lost <= BOUND * sent, f"eligible layer lost {lost} of {sent} (bound {BOUND})"
    stats = gradctl_json(session, "stats")
    drops = selective_drops(stats)
    assert drops == lost, f"switch counters say {drops} selective drops, hosts miss {lost}"
    rows = classes(stats)
    protected = [c for c in rows if c["layers"][0] >= 4]
    assert protected and all(c["dropped"] == 0 for c in protected), rows
    s1 = [c for c in rows if c["switch"] == "s1" and c["layers"] == [0, 3]][0]
    assert s1["seen"] == sent and s1["dropped"] == lost and s1["within_bound"], s1
