"""The engine runs a hand-built BMv2 JSON L3 router: LPM forwarding, TTL, checksum, drop."""
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from p4target.engine import Engine, Lpm, UnknownNameError, InvalidEntryError
from p4target.engine.sample_programs import l3_router
import pytest


def frame(dst="10.0.1.5", ttl=64) -> bytes:
    return bytes(Ether(dst="00:00:00:00:00:01", src="00:00:00:00:00:02") /
                 IP(src="10.0.0.1", dst=dst, ttl=ttl) / UDP(sport=1, dport=2) / b"payload")


def test_lpm_forwarding_rewrites_macs_ttl_and_checksum():
    eng = Engine(l3_router())
    eng.table_add("MyIngress.ipv4_lpm", [Lpm(0x0A000100, 24)], "MyIngress.ipv4_forward", [0xAABBCCDDEEFF, 3])
    eng.table_add("MyIngress.ipv4_lpm", [Lpm(0x0A000000, 16)], "MyIngress.ipv4_forward", [0x111111111111, 2])
    out = eng.process(1, frame())
    assert len(out) == 1
    port, data = out[0]
    assert port == 3
    pkt = Ether(data)
    assert pkt.dst == "aa:bb:cc:dd:ee:ff" and pkt.src == "00:00:00:00:00:01"
    assert pkt[IP].ttl == 63
    expected = IP(bytes(pkt[IP]))
    del expected.chksum
    assert pkt[IP].chksum == IP(bytes(expected)).chksum
    assert bytes(pkt[UDP].payload) == b"payload"
    # the shorter prefix takes other addresses
    assert eng.process(1, frame("10.0.9.9"))[0][0] == 2


def test_default_action_drops_and_counter_counts():
    eng = Engine(l3_router())
    assert eng.process(4, frame()) == []
    assert eng.process(4, frame()) == []
    packets, nbytes = eng.counter_read("MyIngress.rx", 4)
    assert packets == 2 and nbytes == 2 * len(frame())


def test_non_ip_frame_leaves_on_port_0_unchanged_like_bmv2():
    eng = Engine(l3_router())
    data = bytes(Ether(type=0x86DD) / (b"x" * 40))
    assert eng.process(1, data) == [(0, data)]


def test_set_default_action_and_errors():
    eng = Engine(l3_router())
    eng.table_set_default("MyIngress.ipv4_lpm", "MyIngress.ipv4_forward", [1, 7])
    assert eng.process(1, frame())[0][0] == 7
    eng.table_reset_default("MyIngress.ipv4_lpm")
    assert eng.process(1, frame()) == []
    with pytest.raises(UnknownNameError):
        eng.table_add("nope", [1], "NoAction")
    with pytest.raises(InvalidEntryError):
        eng.table_add("MyIngress.ipv4_lpm", [Lpm(0, 40)], "NoAction")
    with pytest.raises(InvalidEntryError):
        eng.table_add("MyIngress.ipv4_lpm", [Lpm(0, 8)], "MyIngress.ipv4_forward", [1])


def test_truncated_frame_sets_parser_error_and_is_dropped():
    eng = Engine(l3_router())
    eng.table_set_default("MyIngress.ipv4_lpm", "MyIngress.ipv4_forward", [1, 7])
    short = frame()[:20]
    # ipv4 extraction fails (PacketTooShort): ipv4 stays invalid, the table is not applied,
    # egress_spec stays 0, and the bytes after ethernet pass through as payload
    assert eng.process(1, short) == [(0, short)]
