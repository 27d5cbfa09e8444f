"""Switch ports on a real veth pair (root): AF_PACKET interface ports receive any MAC and never
re-receive their own frames, apply loss on egress, count send failures and kernel drops, and
close their sockets, and a missing interface is a port error (split from
tests/unit/p4target/switch/test_ports.py)."""
import os
import queue
import socket
import subprocess
import threading
import time

import pytest

from p4target.switch.links.impairments import parse_impairment
from p4target.switch.pcap import read_pcap
from p4target.switch.ports import PortError, SwitchPorts


def frame(n: int, size: int = 60) -> bytes:
    """An Ethernet frame carrying sequence number n."""
    head = bytes.fromhex("020000000001" "020000000002" "88b5") + n.to_bytes(4, "big")
    return head + bytes(size - len(head))


def seq(data: bytes) -> int:
    return int.from_bytes(data[14:18], "big")


@pytest.fixture
def veth():
    """A veth pair (switch side, peer side), both up, IPv6 off so the kernel stays quiet."""
    a, b = f"gtp{os.getpid() % 100000}a", f"gtp{os.getpid() % 100000}b"
    subprocess.run(["ip", "link", "add", a, "type", "veth", "peer", "name", b], check=True)
    try:
        for name in (a, b):
            subprocess.run(["sysctl", "-qw", f"net.ipv6.conf.{name}.disable_ipv6=1"], check=False)
            subprocess.run(["ip", "link", "set", name, "up"], check=True)
        yield a, b
    finally:
        subprocess.run(["ip", "link", "del", a], check=False)


def raw_socket(iface: str) -> socket.socket:
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x88B5))
    s.bind((iface, 0x88B5))
    s.settimeout(0.3)
    return s


def drain(sock: socket.socket) -> list[bytes]:
    out = []
    try:
        while True:
            out.append(sock.recv(65536))
    except socket.timeout:
        return out


def next_test_frame(got: queue.Queue, timeout: float = 3.0) -> tuple[int, bytes]:
    """The next (port, frame) of this test's ethertype (the kernel may add its own frames)."""
    deadline = time.monotonic() + timeout
    while True:
        port, data = got.get(timeout=max(0.01, deadline - time.monotonic()))
        if data[12:14] == b"\x88\xb5":
            return port, data


def test_interface_port_receives_any_mac_and_never_rereceives_its_own_frames(veth, tmp_path):
    sw, peer = veth
    got = queue.Queue()
    sp = SwitchPorts({3: sw}, lambda port, data: got.put((port, data)), pcap_dir=str(tmp_path))
    sp.start()
    peer_sock = raw_socket(peer)
    try:
        foreign = bytes.fromhex("0a0b0c0d0e0f") + frame(5)[6:]  # not our MAC: needs promiscuous mode
        peer_sock.send(foreign)
        port, data = next_test_frame(got)
        assert port == 3 and data[:60] == foreign
        sp.transmit(3, frame(6))
        assert [seq(d) for d in drain(peer_sock)] == [6]
        # what the switch sent on its own interface does not come back in
        time.sleep(0.1)
        with pytest.raises(queue.Empty):
            next_test_frame(got, timeout=0.2)
    finally:
        peer_sock.close()
        sp.stop()
    ins = list(read_pcap(str(tmp_path / f"{sw}_in.pcap")))
    outs = list(read_pcap(str(tmp_path / f"{sw}_out.pcap")))
    assert [seq(r.data) for r in ins if r.data[12:14] == b"\x88\xb5"] == [5]
    assert [seq(r.data) for r in outs] == [6]


def test_interface_port_applies_loss_on_egress(veth):
    sw, peer = veth
    sp = SwitchPorts({1: sw}, lambda p, d: None, impairments=dict([parse_impairment("1:loss=1")]))
    sp.start()
    peer_sock = raw_socket(peer)
    try:
        for i in range(10):
            sp.transmit(1, frame(i))
        assert drain(peer_sock) == []
        assert sp.stats(1).impairment_drops == 10
    finally:
        peer_sock.close()
        sp.stop()


def test_stop_closes_sockets_and_threads(veth):
    sw, _ = veth
    before = threading.active_count()
    sp = SwitchPorts({1: sw}, lambda p, d: None)
    sp.start()
    sp.stop()
    sp.stop()  # idempotent
    assert threading.active_count() <= before


def test_send_failures_are_counted_and_warned_once(veth):
    import io

    from p4target.switch.switch_log import SwitchLog
    sw, _ = veth
    console = io.StringIO()
    sp = SwitchPorts({1: sw}, lambda p, d: None, log=SwitchLog(console=True, level="info", console_stream=console))
    sp.start()
    try:
        subprocess.run(["ip", "link", "del", sw], check=True)
        for i in range(3):
            sp.transmit(1, frame(i))
        assert sp.stats(1).send_errors == 3 and sp.stats(1).transmitted == 0
    finally:
        sp.stop()
    assert console.getvalue().count("cannot send packet") == 1


def test_oversize_frames_warn_once_per_interval_despite_good_sends(veth, monkeypatch):
    import io

    from p4target.switch import ports
    from p4target.switch.switch_log import SwitchLog
    sw, _ = veth
    console = io.StringIO()
    sp = SwitchPorts({1: sw}, lambda p, d: None, log=SwitchLog(console=True, level="info", console_stream=console))
    sp.start()
    try:
        for i in range(5):                       # oversize, good, oversize, good, ...
            sp.transmit(1, frame(i, size=9000))
            sp.transmit(1, frame(i))
        assert sp.stats(1).send_errors == 5 and sp.stats(1).transmitted == 5
        assert console.getvalue().count("cannot send packet of size 9000") == 1
        monkeypatch.setattr(ports, "SEND_WARN_INTERVAL", 0.0)
        sp.transmit(1, frame(9, size=9000))      # the interval passed: one line with the count
    finally:
        sp.stop()
    lines = [l for l in console.getvalue().splitlines() if "cannot send packet" in l]
    assert len(lines) == 2 and lines[1].endswith("(4 more since the last warning)"), lines


def test_frames_the_kernel_drops_on_a_full_receive_socket_are_counted(veth):
    """A stalled data path: every frame sent is either received or counted as a socket drop."""
    sw, peer = veth
    release = threading.Event()
    ours = []

    def on_frame(port, data):
        release.wait(20)
        if data[12:14] == b"\x88\xb5":
            ours.append(seq(data))

    sp = SwitchPorts({1: sw}, on_frame)
    sp.start()
    peer_sock = raw_socket(peer)
    sent = 30000  # far beyond what the 4 MB receive buffer holds
    try:
        for i in range(sent):
            peer_sock.send(frame(i))
        release.set()
        last, deadline = -1, time.monotonic() + 20
        while len(ours) != last and time.monotonic() < deadline:
            last = len(ours)
            time.sleep(0.3)
        drops = sp.counters()[1]["socket_drops"]
    finally:
        release.set()
        peer_sock.close()
        sp.stop()
    assert drops > 0 and len(ours) < sent
    assert len(ours) + drops >= sent
    assert ours == sorted(ours)  # what got through kept its order


def test_missing_interface_is_a_port_error():
    with pytest.raises(PortError, match="does not exist"):
        SwitchPorts({1: "gtp-nosuch0"}, lambda p, d: None)
