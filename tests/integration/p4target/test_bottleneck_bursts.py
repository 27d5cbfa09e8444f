"""`topo.link_bursts` against a running switch process with frames flowing over real veth links:
a burst started through the Thrift link service drops frames during its window only, and
`RoundTriggeredBursts` starts one when a PS log reaches the round before the planned one."""
from __future__ import annotations

import json
import time


from controller.topology import Link, Switch, Topology
from experiments.dblp_microbursts import Burst, RoundTriggeredBursts
from support.switch_probes import Stream, program_file, routes
from topo.link_bursts import BottleneckBursts


def _topology(thrift_port: int) -> Topology:
    """s1's port 2 (towards h2) as the rated egress of a bottleneck."""
    topo = Topology(name="burst-test")
    topo.switches["s1"] = Switch(name="s1", device_id=1, grpc_addr="127.0.0.1:1", thrift_port=thrift_port,
                                 router_mac="00:00:0a:00:01:fe")
    topo.links.append(Link(a="s1", b="h2", a_port=2, a_queue_rate_pps=5000.0))
    return topo


def _start(two_hosts, start_switch, open_ns_socket, tmp_path):
    h1, h2 = two_hosts
    sw = start_switch(["-i", f"1@{h1.switch_iface}", "-i", f"2@{h2.switch_iface}", "--thrift-port", "0",
                       "--log-file", str(tmp_path / "sw.log"), "-L", "info", program_file(tmp_path)])
    routes(sw)
    return sw, open_ns_socket(h1.ns, h1.iface), open_ns_socket(h2.ns, h2.iface)


def test_a_burst_drops_during_its_window_only(two_hosts, start_switch, open_ns_socket, tmp_path):
    sw, s1, s2 = _start(two_hosts, start_switch, open_ns_socket, tmp_path)
    with BottleneckBursts(_topology(sw.thrift_port()), rated_only=True) as links, \
            Stream(s1, s2, period=0.004) as stream:
        time.sleep(0.4)
        set_at = time.monotonic()
        links.burst(0.5, 1.0)
        assert links.current() == {"s1:2": "delay=0ms,jitter=0ms,loss=0,burst=0s+500ms@1"}
        time.sleep(1.0)
        time.sleep(0.2)  # the last probes arrive
    sent, got = stream.delivered(0.0, set_at - 0.02)
    assert sent > 50 and got == sent
    sent, got = stream.delivered(set_at + 0.03, set_at + 0.47)
    assert sent > 50 and got == 0
    sent, got = stream.delivered(set_at + 0.55, set_at + 1.0)
    assert sent > 50 and got == sent
    assert sw.stop() == 0


def test_a_planned_burst_starts_when_the_round_before_it_is_logged(two_hosts, start_switch, open_ns_socket,
                                                                    tmp_path):
    sw, _, _ = _start(two_hosts, start_switch, open_ns_socket, tmp_path)
    log = tmp_path / "job1.ps.log"
    with BottleneckBursts(_topology(sw.thrift_port()), rated_only=True) as links:
        trigger = RoundTriggeredBursts(log, links, [Burst(round=2, loss=0.75, duration_s=0.3)])
        trigger.start()
        with open(log, "w") as out:
            for rnd in range(2):
                time.sleep(0.2)
                out.write(json.dumps({"event": "round", "round": rnd, "time_s": 0.2}) + "\n")
                out.flush()
                if rnd == 0:
                    time.sleep(0.2)
                    assert trigger.fired == [] and links.current()["s1:2"] == "off"
            logged = time.time()
            for _ in range(100):
                if trigger.fired:
                    break
                time.sleep(0.01)
        trigger.stop()
        assert trigger.error is None
        assert [(f["round"], f["loss"]) for f in trigger.fired] == [(2, 0.75)]
        assert 0 <= trigger.fired[0]["t_start"] - logged < 0.5
        assert links.current()["s1:2"].endswith("burst=0s+300ms@0.75")
    assert sw.stop() == 0
