"""A live policy change through gradctl changes the switches' drop behaviour without a restart."""
from support.topology_helpers import budget_policy, gradctl_json, selective_drops

PER_LAYER = 200
BOUND = 0.2


def _round(t, ps_ip, round_):
    rx = t.receiver("ps", "--idle", "3")
    senders = [t.start(w, "send", "--dst", ps_ip, "--layers", "0,10", "--count", str(PER_LAYER),
                       "--rate", "500", "--rank", str(rank), "--round", str(round_))
               for rank, w in enumerate(("w1", "w2"))]
    for s in senders:
        t.result(s)
    return t.result(rx)["layers"]


def test_policy_change_takes_effect_live(network, traffic, tmp_path):
    strict = budget_policy(tmp_path / "strict.yaml", 0.0)
    session = network("incast", policy=strict, workers=2, background=0, bottleneck_pps=400, queue_depth=1000)
    ps_ip = session.topo.hosts["ps"].ip
    t = traffic(session)
    before = _round(t, ps_ip, 1)
    assert before["0"]["count"] == 2 * PER_LAYER, "bound 0 must drop nothing"
    assert selective_drops(gradctl_json(session, "stats")) == 0
    done = session.gradctl("policy", "set", "--job", "1", "--layers", "0-3", "--loss-bound", str(BOUND))
    assert done.returncode == 0, done.stderr
    after = _round(t, ps_ip, 2)
    lost = 2 * PER_LAYER - after["0"]["count"]
    assert after["10"]["count"] == 2 * PER_LAYER
    assert 0 < lost <= BOUND * 2 * PER_LAYER, f"after the change: lost {lost}"
    assert selective_drops(gradctl_json(session, "stats")) == lost
