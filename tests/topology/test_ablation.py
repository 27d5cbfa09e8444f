"""Ablation switches on a real network: `gradctl policy set --job J --spray no` makes the
switches hash the job's gradient packets per flow (one spine), `--spray yes` sprays them again
(both spines); `policy show` reports the switch."""
from support.topology_helpers import gradctl_json

COUNT = 200


def _uplink_tx(session, uplinks: list[int]) -> dict[int, int]:
    queues = gradctl_json(session, "stats", "--switch", "l1")["l1"]["queues"]
    return {port: sum(q["tx"] for q in queues if q["port"] == port) for port in uplinks}


def _send_and_count(session, t, uplinks: list[int]) -> list[int]:
    before = _uplink_tx(session, uplinks)
    rx = t.receiver("ps", "--idle", "1")
    t.result(t.start("w1", "send", "--dst", session.topo.hosts["ps"].ip, "--layers", "0",
                     "--count", str(COUNT), "--rate", "1000"))
    assert t.result(rx)["layers"]["0"]["count"] == COUNT
    after = _uplink_tx(session, uplinks)
    return [after[p] - before[p] for p in uplinks]


def test_spray_switch_per_job(network, traffic):
    session = network("leafspine", workers=2, background=0, bottleneck_pps=2000)
    uplinks = [port for port, peer in sorted(session.topo.ports("l1").items()) if peer.startswith("sp")]
    assert len(uplinks) == 2
    t = traffic(session)
    done = session.gradctl("policy", "set", "--job", "1", "--spray", "no")
    assert done.returncode == 0, done.stderr
    assert gradctl_json(session, "policy", "show")["jobs"][0]["spray"] is False
    hashed = _send_and_count(session, t, uplinks)
    assert sorted(hashed) == [0, COUNT], f"spray off: one flow, one spine: {hashed}"
    done = session.gradctl("policy", "set", "--job", "1", "--spray", "yes")
    assert done.returncode == 0, done.stderr
    sprayed = _send_and_count(session, t, uplinks)
    assert sum(sprayed) == COUNT and min(sprayed) >= 0.25 * COUNT, f"spray on: both spines: {sprayed}"
