"""Whole programs in the style of the public P4 tutorials, compiled by our compiler and run on
the engine with real packets: the coverage check beyond one-feature programs."""
from __future__ import annotations

import struct
from pathlib import Path

from scapy.layers.inet import IP, TCP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from p4target.compiler import compile_file
from p4target.engine import Engine, Exact, Lpm

HERE = Path(__file__).resolve().parent


def _engine(name: str) -> Engine:
    return Engine(compile_file(str(HERE / f"{name}.p4")).bmv2_json)


def _calc(op: str, a: int, b: int) -> bytes:
    eth = bytes.fromhex("aaaaaaaaaaaa" "bbbbbbbbbbbb" "1234")
    return eth + struct.pack("!BBBBIII", 0x50, 0x34, 0x01, ord(op), a, b, 0)


def test_calc_computes_and_reflects() -> None:
    e = _engine("calc")
    for op, a, b, want in (("+", 7, 5, 12), ("-", 5, 7, (5 - 7) & 0xFFFFFFFF), ("&", 12, 10, 8),
                           ("|", 12, 10, 14), ("^", 12, 10, 6)):
        (port, out), = e.process(3, _calc(op, a, b))
        assert port == 3
        assert out[:12] == bytes.fromhex("bbbbbbbbbbbb" "aaaaaaaaaaaa")
        assert struct.unpack("!I", out[-4:])[0] == want
    assert e.process(3, _calc("*", 1, 2)) == []                  # const default: drop
    bad_magic = bytearray(_calc("+", 1, 2))
    bad_magic[14] = 0x51
    assert e.process(3, bytes(bad_magic)) == []                  # not parsed: dropped in ingress


def _mri_packet(traces: list[tuple[int, int]]) -> bytes:
    opt = struct.pack("!BBH", 0x80 | 31, 4 + 8 * len(traces), len(traces))  # copy flag, option 31
    body = opt + b"".join(struct.pack("!II", s, q) for s, q in traces)
    ihl = 5 + len(body) // 4
    ip = IP(src="10.0.1.1", dst="10.0.2.2", ihl=ihl, options=[], proto=17)
    raw_ip = bytearray(bytes(ip)[:20])
    raw_ip[0] = 0x40 | ihl
    raw_ip[2:4] = struct.pack("!H", 20 + len(body) + 4)
    return bytes(Ether(dst="00:00:00:00:01:01", src="08:00:00:00:01:01", type=0x0800)) + bytes(raw_ip) + body + b"DATA"


def test_mri_parses_the_trace_stack_and_pushes_one_more() -> None:
    e = _engine("mri")
    e.table_add("MriIngress.ipv4_lpm", [Lpm(0x0A000202, 32)], "MriIngress.ipv4_forward", [0x080000000202, 2])
    e.table_set_default("MriEgress.swtrace", "MriEgress.add_swtrace", [7])
    (port, out), = e.process(1, _mri_packet([(5, 1), (6, 2)]))
    assert port == 2
    ip = IP(out[14:])
    assert ip.ihl == 5 + 1 + 6 and ip.ttl == 63
    assert IP(bytes(ip)).chksum == ip.chksum                      # checksum recomputed
    body = out[34:]
    assert struct.unpack("!H", body[2:4])[0] == 3                 # count 2 -> 3
    assert [struct.unpack("!II", body[4 + 8 * i:12 + 8 * i]) for i in range(3)] == [(7, 0), (5, 1), (6, 2)]
    assert out.endswith(b"DATA")


def _tcp(src: str, dst: str, sport: int, dport: int, flags: str) -> bytes:
    return bytes(Ether() / IP(src=src, dst=dst) / TCP(sport=sport, dport=dport, flags=flags) / Raw(b"x"))


def test_firewall_lets_in_only_replies_to_flows_opened_from_inside() -> None:
    e = _engine("firewall")
    e.table_add("FwIngress.ipv4_exact", [Exact(0x0A000303)], "FwIngress.forward", [3])  # outside host
    e.table_add("FwIngress.ipv4_exact", [Exact(0x0A000101)], "FwIngress.forward", [1])  # inside host
    e.table_add("FwIngress.check_ports", [Exact(1), Exact(3)], "FwIngress.set_direction", [0])
    e.table_add("FwIngress.check_ports", [Exact(3), Exact(1)], "FwIngress.set_direction", [1])
    assert e.process(3, _tcp("10.0.3.3", "10.0.1.1", 80, 5555, "S")) == []      # unsolicited: dropped
    assert [p for p, _ in e.process(1, _tcp("10.0.1.1", "10.0.3.3", 5555, 80, "S"))] == [3]
    assert [p for p, _ in e.process(3, _tcp("10.0.3.3", "10.0.1.1", 80, 5555, "SA"))] == [1]
    assert e.process(3, _tcp("10.0.3.3", "10.0.1.1", 81, 5555, "SA")) == []     # another flow


def _sr(hops: list[int]) -> bytes:
    stack = b"".join(struct.pack("!H", ((1 if i == len(hops) - 1 else 0) << 15) | p)
                     for i, p in enumerate(hops))
    return bytes(6) + bytes(6) + b"\x12\x34" + stack + struct.pack("!BBHII", 64, 17, 0, 1, 2)


def test_source_routing_pops_one_hop_per_switch() -> None:
    e = _engine("source_routing")
    (port, out), = e.process(1, _sr([4, 2, 9]))
    assert port == 4 and out[12:14] == b"\x12\x34" and len(out) == len(_sr([4, 2, 9])) - 2
    (port, out), = e.process(1, _sr([2]))
    assert port == 2 and out[12:14] == b"\x08\x00" and out[14] == 63   # last hop: IPv4 again, TTL - 1
    assert e.process(1, bytes(12) + b"\x08\x00" + bytes(12)) == []      # no route stack: dropped
