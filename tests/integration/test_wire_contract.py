"""The gradient header as the data plane compiles it (BMv2 JSON `header_types`) and as hosts
send it (Scapy `GradientHeader`) agree field by field, and a packet built by hosts crosses the
compiled switch with its telemetry stamped where hosts read it."""
from __future__ import annotations

from pathlib import Path

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from hosts import wire
from hosts.headers import GradientHeader
from p4target.compiler import compile_file
from p4target.engine import Engine, Lpm

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def program() -> dict:
    return compile_file(str(ROOT / "p4src" / "gradlane.p4"), include_dirs=[str(ROOT / "p4src")]).bmv2_json


def test_header_fields_agree(program: dict) -> None:
    types = {t["name"]: t for t in program["header_types"]}
    p4_fields = [(name, width) for name, width, _ in types["gradient_t"]["fields"]]
    scapy_fields = [(f.name, f.size if hasattr(f, "size") else f.sz * 8) for f in GradientHeader.fields_desc]
    assert p4_fields == scapy_fields
    assert sum(w for _, w in p4_fields) == wire.HEADER_LEN * 8


def test_hosts_packet_crosses_the_switch_with_telemetry(program: dict) -> None:
    engine = Engine(program, priority_queues=8)
    member = engine.act_prof_add_member("GradIngress.ecmp_selector", "GradIngress.set_nhop",
                                        [0x00000A0001FE, 0x080000000202, 2])
    engine.table_add("GradIngress.ipv4_lpm", [Lpm(0x0A000202, 32)], member=member)
    payload = bytes(range(16))
    pkt = (Ether(dst="00:00:0a:00:01:fe", src="08:00:00:00:01:01") /
           IP(src="10.0.1.1", dst="10.0.2.2", tos=wire.data_tos(3, True)) /
           UDP(sport=40000, dport=wire.GRADLANE_UDP_PORT) /
           GradientHeader(kind=wire.KIND_DATA, job_id=4, worker_rank=2, layer_id=1, round=9,
                          mag_class=3, payload_len=len(payload), chunk_seq=5, elem_offset=20,
                          tele_max_qdepth=7, tele_hops=2) / Raw(payload))
    (port, data), = engine.process(1, bytes(pkt))
    assert port == 2
    got = Ether(data)
    g = got[GradientHeader]
    assert (g.job_id, g.worker_rank, g.layer_id, g.round, g.chunk_seq, g.elem_offset) == (4, 2, 1, 9, 5, 20)
    assert g.tele_hops == 3 and g.tele_max_qdepth == 7
    assert bytes(got[GradientHeader].payload)[:len(payload)] == payload
    assert got[IP].ttl == pkt[IP].ttl - 1
    assert got[UDP].chksum == 0
    header = wire.unpack_header(bytes(got[UDP].payload))
    assert header.tele_hops == 3 and header.round == 9
