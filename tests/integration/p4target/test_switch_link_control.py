"""Run-time link changes on a running switch process while frames flow over real veth links:
loss set with `python -m p4target.switch.impair` stops delivery and `off` restores it; a rate
burst set through the Thrift link service cuts the delivered rate during its window only."""
from __future__ import annotations

import subprocess
import sys
import time

from thrift.protocol import TBinaryProtocol, TMultiplexedProtocol
from thrift.transport import TSocket, TTransport

from p4target.switch.thrift.links import SERVICE, LinkClient
from support.switch_probes import Stream, program_file, routes


def impair(sw, *args: str) -> str:
    r = subprocess.run([sys.executable, "-m", "p4target.switch.impair", "--thrift-port", str(sw.thrift_port()),
                        *args], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    return r.stdout


def start(two_hosts, start_switch, open_ns_socket, tmp_path):
    h1, h2 = two_hosts
    sw = start_switch(["-i", f"1@{h1.switch_iface}", "-i", f"2@{h2.switch_iface}", "--thrift-port", "0",
                       "--log-file", str(tmp_path / "sw.log"), "-L", "info", program_file(tmp_path)])
    routes(sw)
    return sw, open_ns_socket(h1.ns, h1.iface), open_ns_socket(h2.ns, h2.iface)


def test_loss_set_at_run_time_stops_delivery_and_off_restores_it(two_hosts, start_switch, open_ns_socket,
                                                                 tmp_path):
    sw, s1, s2 = start(two_hosts, start_switch, open_ns_socket, tmp_path)
    with Stream(s1, s2, period=0.005) as stream:
        time.sleep(0.6)
        before_set = time.monotonic()
        assert "impairment delay=0ms,jitter=0ms,loss=1;" in impair(sw, "2", "loss=1.0")
        set_done = time.monotonic()
        time.sleep(0.8)
        before_off = time.monotonic()
        assert "impairment off;" in impair(sw, "2", "off")
        off_done = time.monotonic()
        time.sleep(0.6)
        end = time.monotonic()
        time.sleep(0.3)  # let the last probes arrive
    sent, got = stream.delivered(0.0, before_set)
    assert sent > 50 and got == sent
    sent, got = stream.delivered(set_done + 0.05, before_off)
    assert sent > 50 and got == 0
    sent, got = stream.delivered(off_done + 0.05, end)
    assert sent > 50 and got == sent
    assert sw.stop() == 0
    log = (tmp_path / "sw.log").read_text()
    assert "thrift p4target_links.set_port_impairment(2, 'loss=1.0')" in log and "impairment port 2: off" in log


def test_rate_burst_cuts_the_delivered_rate_during_its_window(two_hosts, start_switch, open_ns_socket, tmp_path):
    sw, s1, s2 = start(two_hosts, start_switch, open_ns_socket, tmp_path)
    transport = TTransport.TBufferedTransport(TSocket.TSocket("127.0.0.1", sw.thrift_port()))
    transport.open()
    links = LinkClient(TMultiplexedProtocol.TMultiplexedProtocol(TBinaryProtocol.TBinaryProtocol(transport),
                                                                 SERVICE))
    try:
        with Stream(s1, s2, period=0.004) as stream:
            time.sleep(0.3)
            links.set_port_impairment(2, "rateburst=0.5s+1s@40")
            t0 = time.monotonic()
            time.sleep(2.2)
        before = stream.arrivals(t0, t0 + 0.45) / 0.45
        during = stream.arrivals(t0 + 0.6, t0 + 1.45) / 0.85  # past the first queued frames' drain
        after = stream.arrivals(t0 + 1.8, t0 + 2.2) / 0.4  # the queue built in the burst has drained
        assert links.get_port_impairment(2) == "delay=0ms,jitter=0ms,loss=0,rateburst=0.5s+1000ms@40"
    finally:
        transport.close()
    print(f"delivered packets/s: before {before:.0f}, during the 40 pps burst {during:.0f}, after {after:.0f}")
    assert during <= 50
    assert before >= 3 * during and after >= 3 * during
    assert sw.stop() == 0
