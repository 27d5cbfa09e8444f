"""Scapy layers vs the struct fast path: byte-identical, dissectable, same fields as p4src."""
import re
from pathlib import Path

import numpy as np
import pytest
from scapy.layers.inet import IP, UDP
from scapy.packet import Raw

from hosts import wire
from hosts.headers import GradAck, GradAckEntry, GradBitmap, GradData, GradientHeader

ROOT = Path(__file__).resolve().parents[3]

HEADER_CASES = [
    dict(kind=wire.KIND_DATA, flags=wire.FLAG_DROPPABLE | wire.FLAG_RETX, job_id=7, worker_rank=3,
         layer_id=1, round=123456, mag_class=5, chunk_seq=9, elem_offset=576),
    dict(kind=wire.KIND_PROBE, flags=wire.FLAG_PULL, job_id=0xFFFF, worker_rank=wire.PS_RANK,
         layer_id=wire.ALL_LAYERS, round=0xFFFFFFFF),
    dict(kind=wire.KIND_STOP, flags=0, job_id=1, worker_rank=0, layer_id=0, round=1,
         tele_max_qdepth=63, tele_hops=3, tele_qdelay_us=123456789),
    dict(kind=wire.KIND_PULL_REQ, flags=wire.FLAG_PULL | wire.FLAG_LAST | wire.FLAG_CRITICAL,
         job_id=2, worker_rank=4, layer_id=0, round=77),
    dict(kind=wire.KIND_PCN_START, flags=0, job_id=2, worker_rank=4, layer_id=0, round=5),
    dict(kind=wire.KIND_PCN_ACK, flags=0, job_id=2, worker_rank=wire.PS_RANK, layer_id=0, round=5),
]


def _fast(case, payload=b""):
    return wire.pack_header(case["kind"], case["flags"], case["job_id"], case["worker_rank"],
                            case["layer_id"], case["round"], case.get("mag_class", 0),
                            len(payload), case.get("chunk_seq", 0), case.get("elem_offset", 0),
                            case.get("tele_max_qdepth", 0), case.get("tele_hops", 0),
                            case.get("tele_qdelay_us", 0)) + payload


@pytest.mark.parametrize("case", HEADER_CASES)
def test_header_only_bytes_identical(case):
    assert bytes(GradientHeader(**case)) == _fast(case)


def test_data_packet_bytes_identical_and_values_roundtrip():
    case = HEADER_CASES[0]
    values = np.array([0.5, -1.25, 3.0e-7, 1e6], dtype=np.float32)
    payload = values.astype(">f4").tobytes()
    scapy_bytes = bytes(GradientHeader(**case) / GradData(values=[float(v) for v in values]))
    assert scapy_bytes == _fast(case, payload)
    parsed = GradientHeader(scapy_bytes)
    assert parsed.payload_len == 16
    assert np.allclose(parsed[GradData].values, values)


def test_ack_and_bitmap_payloads_identical():
    entries = [(0, 5), (1, 0), (0, 2)]
    ack = dict(kind=wire.KIND_ACK, flags=0, job_id=1, worker_rank=wire.PS_RANK, layer_id=0xFFFF,
               round=3)
    pay = wire.pack_ack_entries(entries)
    sc = GradientHeader(**ack) / GradAck(
        entries=[GradAckEntry(layer_id=layer, chunk_seq=seq) for layer, seq in entries])
    assert bytes(sc) == _fast(ack, pay)
    assert wire.unpack_ack_entries(pay) == entries
    bits = np.array([1, 0, 1, 1, 0, 0, 0, 0, 1, 1], dtype=bool)
    bm = dict(kind=wire.KIND_BITMAP, flags=wire.FLAG_PULL, job_id=1, worker_rank=0, layer_id=1,
              round=3)
    bpay = wire.pack_bitmap(bits)
    assert bytes(GradientHeader(**bm) / GradBitmap(bitmap=bpay)) == _fast(bm, bpay)
    assert list(wire.unpack_bitmap(bpay, len(bits))) == list(bits)


def test_udp_port_binding_dissects_gradient_header():
    case = HEADER_CASES[0]
    raw = bytes(IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=40000, dport=wire.GRADLANE_UDP_PORT)
                / Raw(_fast(case, b"\0" * 8)))
    pkt = IP(raw)
    assert GradientHeader in pkt
    g = pkt[GradientHeader]
    for name, value in case.items():
        assert getattr(g, name) == value, name
    # replies come from the port: bound on sport as well
    reply = IP(bytes(IP() / UDP(sport=wire.GRADLANE_UDP_PORT, dport=40000) / Raw(_fast(HEADER_CASES[2]))))
    assert reply[GradientHeader].kind == wire.KIND_STOP


def test_field_names_and_widths_match_p4src():
    text = (ROOT / "p4src" / "headers.p4").read_text()
    body = re.search(r"header\s+gradient_t\s*\{(.*?)\}", text, re.S).group(1)
    p4_fields = [(m.group(2), int(m.group(1))) for m in re.finditer(r"bit<(\d+)>\s+(\w+);", body)]
    scapy_fields = [(f.name, f.size if hasattr(f, "size") else f.sz * 8)
                    for f in GradientHeader.fields_desc]
    assert p4_fields == scapy_fields
    assert sum(w for _, w in p4_fields) == wire.HEADER_LEN * 8
    assert len(bytes(GradientHeader())) == wire.HEADER_LEN


def test_pcap_roundtrip_dissects_every_kind(tmp_path):
    from scapy.layers.l2 import Ether
    from scapy.utils import rdpcap, wrpcap

    frames = [Ether(dst="ff:ff:ff:ff:ff:ff") / IP(src="10.0.1.1", dst="10.0.2.1", tos=wire.pcn_tos(start=True, threshold=10))
              / UDP(sport=wire.GRADLANE_UDP_PORT, dport=wire.GRADLANE_UDP_PORT)
              / Raw(_fast(case)) for case in HEADER_CASES]
    path = tmp_path / "gl.pcap"
    wrpcap(str(path), frames)
    kinds = [p[GradientHeader].kind for p in rdpcap(str(path))]
    assert kinds == [c["kind"] for c in HEADER_CASES]


def test_hello_payload_bytes_identical():
    from hosts.headers import GradHello

    case = dict(kind=wire.KIND_HELLO, flags=0, job_id=1, worker_rank=2, layer_id=wire.ALL_LAYERS,
                round=0)
    from hosts.exchange.join import JoinClient, STEP_HELLO

    pay = JoinClient(b"k" * 32, 1, 2, 0xDEADBEEF).next_hello()
    hello = GradHello(step=STEP_HELLO, body=pay[1:])
    assert bytes(GradientHeader(**case) / hello) == _fast(case, pay)
    assert GradientHeader(_fast(case, pay))[GradHello].step == STEP_HELLO


def test_plain_flag_is_bit_5_in_both_definitions():
    # Contract with the data plane: 0x20 PLAIN = no network assistance (the MLT baseline).
    assert wire.FLAG_PLAIN == 0x20
    pkt = GradientHeader(flags="PLAIN+CRITICAL")
    assert bytes(pkt)[1] == wire.FLAG_PLAIN | wire.FLAG_CRITICAL
    assert wire.unpack_header(wire.pack_header(wire.KIND_DATA, wire.FLAG_PLAIN, 1, 0, 0, 0)).flags == 0x20
