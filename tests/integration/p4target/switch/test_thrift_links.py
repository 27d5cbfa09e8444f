"""Run-time link calls on the real Thrift server (service "p4target_links"), through
`LinkClient` and through the `python -m p4target.switch.impair` command; ports are pcap-file
ports, so no root is needed."""
from __future__ import annotations

import subprocess
import sys

import pytest
from thrift.protocol import TBinaryProtocol, TMultiplexedProtocol
from thrift.Thrift import TApplicationException
from thrift.transport import TSocket, TTransport

from p4target.engine.sample_programs import l3_router
from p4target.switch.links.control import LinkControl
from p4target.switch.pcap import PcapWriter
from p4target.switch.links.port_rates import PortRateSchedule
from p4target.switch.ports import SwitchPorts
from p4target.switch.target import SwitchTarget
from p4target.switch.thrift.links import SERVICE, LinkClient
from p4target.switch.thrift.server import ThriftServer


@pytest.fixture
def switch(tmp_path):
    target = SwitchTarget(transmit=lambda port, data: None)
    target.set_pipeline(l3_router())
    ifaces = {}
    for port in (1, 2):
        ifaces[port] = str(tmp_path / f"p{port}")
        PcapWriter(ifaces[port] + "_in.pcap").close()
    ports = SwitchPorts(ifaces, target.receive, use_files_wait=0)
    rates = PortRateSchedule(target)
    server = ThriftServer(target, 0, host="127.0.0.1", links=LinkControl(ports, rates))
    rates.start()
    server.start()
    yield target, ports, rates, server
    server.stop()
    rates.stop()
    target.stop()
    ports.stop()


@pytest.fixture
def client(switch):
    transport = TTransport.TBufferedTransport(TSocket.TSocket("127.0.0.1", switch[3].port))
    transport.open()
    yield LinkClient(TMultiplexedProtocol.TMultiplexedProtocol(TBinaryProtocol.TBinaryProtocol(transport),
                                                               SERVICE))
    transport.close()


def test_set_get_and_clear_an_impairment(switch, client):
    target, ports, _, _ = switch
    assert client.get_port_impairment(2) == "off"
    assert client.set_port_impairment(2, "delay=5ms,loss=0.5,rateburst=0s+10s@40") == 0
    assert client.get_port_impairment(2) == "delay=5ms,jitter=0ms,loss=0.5,rateburst=0s+10000ms@40"
    assert ports.impairment(2).loss == 0.5 and ports.impairment(1) is None
    assert target.engine.tm.shapers[2].pps == 40.0  # the rate burst is on the TM shaper now
    assert client.set_port_impairment(2, "off") == 0
    assert client.get_port_impairment(2) == "off" and ports.impairment(2) is None
    assert target.engine.tm.shapers[2].pps is None


def test_port_rate_is_set_read_and_capped_by_a_burst(switch, client):
    target, _, rates, _ = switch
    assert client.get_port_rate(1) == 0.0
    client.set_port_rate(1, 300)
    assert client.get_port_rate(1) == 300.0 and target.engine.tm.shapers[1].pps == 300.0
    client.set_port_impairment(1, "rateburst=0s+5s@100")
    assert rates.effective_rate(1) == 100.0 and client.get_port_rate(1) == 300.0
    client.set_port_impairment(1, "off")
    assert target.engine.tm.shapers[1].pps == 300.0
    client.set_port_rate(1, 0)
    assert client.get_port_rate(1) == 0.0 and target.engine.tm.shapers[1].pps is None


@pytest.mark.parametrize("call, fragment", [
    (lambda c: c.set_port_impairment(2, "loss=2"), "bad loss '2'"),
    (lambda c: c.set_port_impairment(2, "loss=0.1,color=red"), "unknown impairment 'color'"),
    (lambda c: c.set_port_impairment(7, "loss=0.1"), "port 7 has no interface"),
    (lambda c: c.get_port_impairment(7), "port 7 has no interface"),
    (lambda c: c.set_port_rate(7, 10), "port 7 has no interface"),
    (lambda c: c.set_port_rate(2, -5), "bad rate"),
    (lambda c: c.set_port_rate(2, float("nan")), "bad rate"),
])
def test_bad_requests_are_refused_and_change_nothing(switch, client, call, fragment):
    _, ports, rates, _ = switch
    client.set_port_impairment(2, "loss=0.25")
    client.set_port_rate(2, 50)
    with pytest.raises(TApplicationException, match=fragment):
        call(client)
    assert ports.impairment(2).loss == 0.25 and rates.base_rate(2) == 50.0
    assert client.get_port_impairment(2) == "delay=0ms,jitter=0ms,loss=0.25"  # connection still usable


def impair(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "p4target.switch.impair", *args], capture_output=True,
                          text=True, timeout=60)


def test_command_sets_shows_and_clears(switch):
    _, ports, rates, server = switch
    port = str(server.port)
    r = impair("--thrift-port", port, "2", "loss=1.0,burst=1s+20ms@1", "--rate", "250")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "port 2: impairment delay=0ms,jitter=0ms,loss=1,burst=1s+20ms@1; rate 250 packets/s\n"
    assert ports.impairment(2).loss == 1.0 and rates.base_rate(2) == 250.0
    r = impair("--thrift-port", port, "2")
    assert r.returncode == 0 and "loss=1," in r.stdout
    r = impair("--thrift-port", port, "2", "off", "--rate", "off")
    assert r.returncode == 0 and r.stdout == "port 2: impairment off; rate unshaped\n"
    assert ports.impairment(2) is None and rates.base_rate(2) is None


@pytest.mark.parametrize("args, code, fragment", [
    (["2", "loss=1.5"], 2, "bad loss '1.5'"),
    (["2", "--rate", "fast"], 2, "bad --rate 'fast'"),
    (["x", "off"], 2, "invalid int value"),
    (["9", "loss=0.5"], 1, "port 9 has no interface"),
])
def test_command_errors_are_one_line_and_apply_nothing(switch, args, code, fragment):
    _, ports, rates, server = switch
    r = impair("--thrift-port", str(server.port), *args)
    assert r.returncode == code and r.stdout == ""
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("p4target switch impair: error:") and fragment in r.stderr
    assert ports.impairment(2) is None and rates.base_rate(2) is None


def test_command_without_a_switch_says_so(tmp_path):
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        free = s.getsockname()[1]
    r = impair("--thrift-port", str(free), "1", "off")
    assert r.returncode == 1 and r.stderr == (f"p4target switch impair: error: cannot connect to the switch's "
                                              f"Thrift server at 127.0.0.1:{free}\n")
