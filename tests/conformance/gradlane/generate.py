"""Writes the STF tests of gradlane's data plane (p4src/gradlane.p4) next to this file.

The scenarios are written here in terms of packets and table entries; the packet bytes and
what the switch must send back are computed from docs/contracts.md and p4src/README.md (not
from the program). Run `python tests/conformance/gradlane/generate.py` after changing a
scenario; `test_generated.py` fails when a committed .stf is out of date.
"""
from __future__ import annotations

import struct
import sys
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROUTER_MAC = 0x00000A0001FE
H1_MAC, H2_MAC, H3_MAC = 0x080000000101, 0x080000000202, 0x080000000303
H1_IP, H2_IP, H3_IP = 0x0A000101, 0x0A000202, 0x0A000303
GRAD_PORT = 19527
PULL = 0x01
CRITICAL = 0x10
PLAIN = 0x20
LANES = 16   # budget lanes per (slot, stage): p4src/README.md


def budget(slot: int, lane: int = 0, pull: bool = False) -> int:
    """Index of a (slot, stage, lane) loss budget in GradIngress.budget_*."""
    return (slot * 2 + int(pull)) * LANES + lane


def _mac(v: int) -> bytes:
    return v.to_bytes(6, "big")


def _csum(data: bytes) -> int:
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def ipv4(src: int, dst: int, proto: int, payload_len: int, tos: int = 0, ttl: int = 64,
         options: bytes = b"") -> bytes:
    """An IPv4 header (with ``options``, a multiple of 4 bytes) and its correct checksum."""
    ihl = 5 + len(options) // 4
    hdr = struct.pack("!BBHHHBBHII", 0x40 | ihl, tos, 4 * ihl + payload_len, 0, 0, ttl, proto, 0,
                      src, dst) + options
    return hdr[:10] + struct.pack("!H", _csum(hdr)) + hdr[12:]


@dataclass
class Grad:
    """A gradient-transport packet (docs/contracts.md field names)."""
    kind: int = 0
    flags: int = 0
    job_id: int = 1
    worker_rank: int = 0
    layer_id: int = 0
    round: int = 1
    mag_class: int = 0
    chunk_seq: int = 0
    elem_offset: int = 0
    tele_max_qdepth: int = 0
    tele_hops: int = 0
    tele_qdelay_us: int = 0
    policy_epoch: int = 0
    payload: bytes = bytes(8)

    def header(self) -> bytes:
        return struct.pack("!BBHHHIBBHIIHHI", 0x10 | self.kind, self.flags, self.job_id,
                           self.worker_rank, self.layer_id, self.round, self.mag_class,
                           self.policy_epoch, len(self.payload), self.chunk_seq, self.elem_offset,
                           self.tele_max_qdepth, self.tele_hops, self.tele_qdelay_us)


def grad_frame(g: Grad, src_ip: int = H1_IP, dst_ip: int = H2_IP, tos: int = 0, ttl: int = 64,
               dst_mac: int = ROUTER_MAC, src_mac: int = H1_MAC, udp_csum: int = 0x1234,
               options: bytes = b"") -> bytes:
    body = g.header() + g.payload
    udp = struct.pack("!HHHH", 40000, GRAD_PORT, 8 + len(body), udp_csum) + body
    return (_mac(dst_mac) + _mac(src_mac) + b"\x08\x00"
            + ipv4(src_ip, dst_ip, 17, len(udp), tos, ttl, options) + udp)


def corrupt_checksum(frame: bytes) -> bytes:
    """``frame`` with its IPv4 header checksum off by one (a header damaged on the way)."""
    b = bytearray(frame)
    b[24:26] = struct.pack("!H", (struct.unpack("!H", b[24:26])[0] + 1) & 0xFFFF)
    return bytes(b)


def udp_frame(dport: int, tos: int = 0, src_ip: int = H1_IP, dst_ip: int = H2_IP, ttl: int = 64,
              dst_mac: int = ROUTER_MAC, src_mac: int = H1_MAC, payload: bytes = bytes(8),
              options: bytes = b"") -> bytes:
    udp = struct.pack("!HHHH", 40000, dport, 8 + len(payload), 0x4321) + payload
    return (_mac(dst_mac) + _mac(src_mac) + b"\x08\x00"
            + ipv4(src_ip, dst_ip, 17, len(udp), tos, ttl, options) + udp)


def tcp_frame(dport: int, tos: int = 2, src_ip: int = H1_IP, dst_ip: int = H2_IP, ttl: int = 64,
              payload: bytes = bytes(8)) -> bytes:
    """A TCP segment (ECT(0) by default, as a kernel with ECN on sends its data)."""
    tcp = struct.pack("!HHIIBBHHH", 40000, dport, 1, 0, 5 << 4, 0x18, 512, 0x4321, 0) + payload
    return (_mac(ROUTER_MAC) + _mac(H1_MAC) + b"\x08\x00"
            + ipv4(src_ip, dst_ip, 6, len(tcp), tos, ttl) + tcp)


def routed(frame: bytes, nhop_src: int, nhop_dst: int, grad: bool, ce: bool = False) -> str:
    """Expected hex of a frame after one hop: MACs rewritten, TTL - 1, checksum recomputed;
    gradient DATA also gets telemetry (hops + 1, queueing delay left as a wildcard) and UDP
    checksum 0."""
    b = bytearray(frame)
    b[0:6] = _mac(nhop_dst)
    b[6:12] = _mac(nhop_src)
    ip_end = 14 + 4 * (b[14] & 0x0F)      # the checksum covers the options too
    ip = bytearray(b[14:ip_end])
    ip[8] -= 1
    if ce:
        ip[1] |= 0x03
    ip[10:12] = b"\x00\x00"
    ip[10:12] = struct.pack("!H", _csum(bytes(ip)))
    b[14:ip_end] = ip
    text = b.hex()
    if grad:
        b[ip_end + 6:ip_end + 8] = b"\x00\x00"
        g = ip_end + 8
        hops = struct.unpack("!H", b[g + 26:g + 28])[0] + 1
        b[g + 26:g + 28] = struct.pack("!H", hops)
        text = b.hex()
        start = (g + 28) * 2
        text = text[:start] + "********" + text[start + 8:]
    return text


@dataclass
class Scenario:
    name: str
    title: str
    lines: list[str] = field(default_factory=list)

    def comment(self, text: str) -> None:
        self.lines.append(f"# {text}")

    def add(self, line: str) -> None:
        self.lines.append(line)

    def packet(self, port: int, frame: bytes) -> None:
        self.lines.append(f"packet {port} {frame.hex()}")

    def expect(self, port: int, hex_text: str) -> None:
        self.lines.append(f"expect {port} {hex_text} $")

    def text(self) -> str:
        return f"# {self.title}\n# generated by generate.py: edit the scenario there, not this file\n" + \
            "\n".join(self.lines) + "\n"


def _routes(s: Scenario) -> None:
    s.comment("routes: h2 (10.0.2.2) on port 2, h3 (10.0.3.3) on port 3")
    s.add(f"add GradIngress.ipv4_lpm hdr.ipv4.dstAddr:0x{H2_IP:08x}/32 "
          f"GradIngress.set_nhop(src_mac:0x{ROUTER_MAC:012x}, dst_mac:0x{H2_MAC:012x}, port:2)")
    s.add(f"add GradIngress.ipv4_lpm hdr.ipv4.dstAddr:0x{H3_IP:08x}/32 "
          f"GradIngress.set_nhop(src_mac:0x{ROUTER_MAC:012x}, dst_mac:0x{H3_MAC:012x}, port:3)")


def _class(s: Scenario, prio: int, layers: str, eligible: int, slot: int, push_bp: int, pull_bp: int,
           threshold: int, mags: str = "0..7", job: int = 1, priority: int = 10,
           epoch: int | None = None) -> None:
    """A class entry; ``epoch`` None matches any policy epoch (the job's current entries)."""
    epoch_key = "0x00&&&0x00" if epoch is None else f"0x{epoch:02x}&&&0xff"
    s.add(f"add GradIngress.gradient_class {priority} hdr.gradient.job_id:0x{job:04x}&&&0xffff "
          f"hdr.gradient.layer_id:{layers} hdr.gradient.mag_class:{mags} "
          f"hdr.gradient.policy_epoch:{epoch_key} "
          f"GradIngress.set_class(prio:{prio}, drop_eligible:{eligible}, slot:{slot}, "
          f"push_bound_bp:{push_bp}, pull_bound_bp:{pull_bp}, drop_threshold:{threshold})")


def _send_grad(s: Scenario, g: Grad, port_out: int = 2, dropped: bool = False, tos: int = 0,
               dst_ip: int = H2_IP, dst_mac: int = H2_MAC) -> None:
    frame = grad_frame(g, dst_ip=dst_ip, tos=tos)
    s.packet(1, frame)
    if not dropped:
        s.expect(port_out, routed(frame, ROUTER_MAC, dst_mac, grad=g.kind == 0 and not g.flags & PLAIN))


def priority_by_class() -> Scenario:
    s = Scenario("priority_by_class", "priority queue chosen per (job, layer range, magnitude range); "
                                      "control kinds at 7; unknown jobs at 0")
    _routes(s)
    _class(s, prio=6, layers="0..1", eligible=0, slot=1, push_bp=0, pull_bp=0, threshold=100)
    _class(s, prio=2, layers="2..9", eligible=1, slot=2, push_bp=1000, pull_bp=500, threshold=100)
    s.comment("STF priorities: the higher value wins (BMv2 gets 10000 - priority)")
    _class(s, prio=4, layers="2..9", eligible=0, slot=3, push_bp=0, pull_bp=0, threshold=100, mags="6..7",
           priority=15)
    s.comment("layer 0 -> queue 6 of port 2 (index 2*8+6 = 22)")
    _send_grad(s, Grad(layer_id=0))
    s.comment("layer 5, small magnitude -> queue 2 (index 18)")
    _send_grad(s, Grad(layer_id=5, mag_class=1))
    s.comment("layer 5, magnitude class 7 -> the higher-priority entry: queue 4 (index 20)")
    _send_grad(s, Grad(layer_id=5, mag_class=7))
    s.comment("an ACK (kind 1) of the same job -> priority 7 (index 23), no telemetry")
    _send_grad(s, Grad(kind=1, layer_id=5))
    s.comment("job 9 has no class -> default class, priority 0 (index 16)")
    _send_grad(s, Grad(job_id=9, layer_id=0))
    s.add("wait")
    for idx, n in ((22, 1), (18, 1), (20, 1), (23, 1), (16, 1), (17, 0)):
        s.add(f"check_counter GradEgress.queue_tx_ctr({idx}) packets == {n}")
    for slot, n in ((1, 1), (2, 1), (3, 1)):
        s.add(f"check_counter GradIngress.slot_seen_ctr({slot}) packets == {n}")
    return s


def bounded_drop() -> Scenario:
    s = Scenario("bounded_drop", "selective drop only under congestion, only for eligible packets, "
                                 "never past the layer's bound in a round; budget restarts each round")
    _routes(s)
    _class(s, prio=2, layers="0..3", eligible=1, slot=5, push_bp=2500, pull_bp=1000, threshold=4)
    _class(s, prio=3, layers="4..7", eligible=0, slot=6, push_bp=5000, pull_bp=5000, threshold=4)
    qidx = 2 * 8 + 2
    s.comment(f"queue 2 of port 2 is uncongested (qdepth_reg[{qidx}] = 0): nothing is dropped")
    for seq in range(4):
        _send_grad(s, Grad(layer_id=1, round=1, chunk_seq=seq))
    s.comment("round 2, queue congested (depth 10 > threshold 4) before every packet; bound 25 %:")
    s.comment("drop when (dropped + 1) * 10000 <= seen * 2500: packets 4 and 8 of the round")
    for seq in range(8):
        s.add(f"register_write qdepth_reg {qidx} 10")
        _send_grad(s, Grad(layer_id=1, round=2, chunk_seq=seq), dropped=seq in (3, 7))
    s.add(f"register_read GradIngress.budget_seen {budget(5)} 8")
    s.add(f"register_read GradIngress.budget_dropped {budget(5)} 2")
    s.comment("round 3 restarts the budget: first three pass, the fourth is dropped again")
    for seq in range(4):
        s.add(f"register_write qdepth_reg {qidx} 10")
        _send_grad(s, Grad(layer_id=1, round=3, chunk_seq=seq), dropped=seq == 3)
    s.add(f"register_read GradIngress.budget_round {budget(5)} 3")
    s.comment("pull stage uses the tighter bound (10 %): the 10th packet of round 4 is the first drop")
    for seq in range(10):
        s.add(f"register_write qdepth_reg {qidx} 10")
        _send_grad(s, Grad(flags=PULL, layer_id=2, round=4, chunk_seq=seq), dropped=seq == 9)
    s.comment("not eligible (layers 4..7): never dropped, however deep the queue")
    for seq in range(4):
        s.add(f"register_write qdepth_reg {2 * 8 + 3} 50")
        _send_grad(s, Grad(layer_id=5, round=1, chunk_seq=seq))
    s.add("wait")
    s.add("check_counter GradIngress.slot_seen_ctr(5) packets == 26")
    s.add("check_counter GradIngress.slot_dropped_ctr(5) packets == 4")
    s.add(f"check_counter GradIngress.queue_dropped_ctr({qidx}) packets == 4")
    s.add("check_counter GradIngress.slot_dropped_ctr(6) packets == 0")
    return s


def policy_epoch() -> Scenario:
    s = Scenario("policy_epoch", "while a job's policy change is pending, packets stamped with the "
                                 "previous policy epoch keep the previous class; every other epoch "
                                 "(and 0, no controller) gets the current one")
    _routes(s)
    s.comment("current entry of job 1 (any epoch): queue 2, push bound 25 %")
    _class(s, prio=2, layers="0..3", eligible=1, slot=5, push_bp=2500, pull_bp=1000, threshold=4)
    s.comment("previous entry, only for epoch 7: queue 6, bound 0 (nothing droppable)")
    _class(s, prio=6, layers="0..3", eligible=1, slot=5, push_bp=0, pull_bp=0, threshold=4,
           epoch=7, priority=20)
    qidx_new, qidx_old = 2 * 8 + 2, 2 * 8 + 6
    s.comment("epoch 7, congested: the previous bound 0 drops nothing, queue 6")
    for seq in range(4):
        s.add(f"register_write qdepth_reg {qidx_old} 10")
        _send_grad(s, Grad(layer_id=1, round=3, chunk_seq=seq, policy_epoch=7))
    s.comment("epoch 8 (the new one), congested, next round: the 25 % bound drops the 4th packet")
    for seq in range(4):
        s.add(f"register_write qdepth_reg {qidx_new} 10")
        _send_grad(s, Grad(layer_id=1, round=4, chunk_seq=seq, policy_epoch=8), dropped=seq == 3)
    s.comment("epoch 0 (a host without controller) gets the current entry too")
    _send_grad(s, Grad(layer_id=1, round=5, chunk_seq=0, policy_epoch=0))
    s.add("wait")
    s.add(f"check_counter GradEgress.queue_tx_ctr({qidx_old}) packets == 4")
    s.add(f"check_counter GradEgress.queue_tx_ctr({qidx_new}) packets == 4")
    s.add("check_counter GradIngress.slot_seen_ctr(5) packets == 9")
    s.add("check_counter GradIngress.slot_dropped_ctr(5) packets == 1")
    return s


def stage_budgets() -> Scenario:
    s = Scenario("stage_budgets", "push and pull have their own budget per (slot, round), and each "
                                  "push sender its own lane: pull packets and other workers never "
                                  "inherit drops")
    _routes(s)
    _class(s, prio=2, layers="0..3", eligible=1, slot=5, push_bp=2500, pull_bp=1000, threshold=4)
    qidx = 2 * 8 + 2
    s.comment("round 2 push of worker 0, congested: packets 4 and 8 dropped (25 %)")
    for seq in range(8):
        s.add(f"register_write qdepth_reg {qidx} 10")
        _send_grad(s, Grad(layer_id=1, round=2, chunk_seq=seq), dropped=seq in (3, 7))
    s.comment("round 2 pull (bound 10 %) starts its own count: the 10th pull packet is the first drop")
    for seq in range(10):
        s.add(f"register_write qdepth_reg {qidx} 10")
        _send_grad(s, Grad(flags=PULL, layer_id=1, round=2, chunk_seq=seq, worker_rank=0xFFFF),
                   dropped=seq == 9)
    s.comment("the push budget of round 2 is untouched by the pull packets")
    s.add(f"register_read GradIngress.budget_round {budget(5)} 2")
    s.add(f"register_read GradIngress.budget_seen {budget(5)} 8")
    s.add(f"register_read GradIngress.budget_dropped {budget(5)} 2")
    s.comment("round 3: worker 0 sends 8 packets while the queue is short (none dropped), then worker "
              "1 sends 4 under congestion: only its 4th goes (its own 25 %, not 3 of 4 on worker "
              "0's budget)")
    for seq in range(8):
        _send_grad(s, Grad(layer_id=1, round=3, chunk_seq=seq))
    for seq in range(4):
        s.add(f"register_write qdepth_reg {qidx} 10")
        _send_grad(s, Grad(layer_id=1, round=3, chunk_seq=seq, worker_rank=1), dropped=seq == 3)
    s.add(f"register_read GradIngress.budget_seen {budget(5, lane=1)} 4")
    s.add(f"register_read GradIngress.budget_dropped {budget(5, lane=1)} 1")
    s.add("wait")
    s.add("check_counter GradIngress.stage_seen_ctr(10) packets == 20")
    s.add("check_counter GradIngress.stage_dropped_ctr(10) packets == 3")
    s.add("check_counter GradIngress.stage_seen_ctr(11) packets == 10")
    s.add("check_counter GradIngress.stage_dropped_ctr(11) packets == 1")
    s.add("check_counter GradIngress.slot_seen_ctr(5) packets == 30")
    s.add("check_counter GradIngress.slot_dropped_ctr(5) packets == 4")
    return s


def critical_never_dropped() -> Scenario:
    s = Scenario("critical_never_dropped", "CRITICAL packets and control kinds are never dropped "
                                           "selectively, even in a drop-eligible class")
    _routes(s)
    _class(s, prio=2, layers="0..3", eligible=1, slot=5, push_bp=5000, pull_bp=5000, threshold=4)
    qidx = 2 * 8 + 2
    s.comment("eligible class, bound 50 %, congested: CRITICAL DATA packets all pass")
    for seq in range(6):
        s.add(f"register_write qdepth_reg {qidx} 10")
        _send_grad(s, Grad(flags=CRITICAL, layer_id=1, round=1, chunk_seq=seq))
    s.comment("an ordinary packet of the same class right after is dropped (the budget is there)")
    s.add(f"register_write qdepth_reg {qidx} 10")
    _send_grad(s, Grad(layer_id=1, round=1, chunk_seq=6), dropped=True)
    s.comment("control kinds (ACK, PROBE) at priority 7 pass a congested queue 7")
    for kind in (1, 2):
        s.add(f"register_write qdepth_reg {2 * 8 + 7} 99")
        _send_grad(s, Grad(kind=kind, layer_id=1, round=1))
    s.add("wait")
    s.add("check_counter GradIngress.slot_seen_ctr(5) packets == 7")
    s.add("check_counter GradIngress.slot_dropped_ctr(5) packets == 1")
    return s


def plain_traffic() -> Scenario:
    s = Scenario("plain_traffic", "gradient packets flagged PLAIN are ordinary traffic: no class, "
                                  "no slot counters, no telemetry, DSCP queue, commodity drop")
    _routes(s)
    _class(s, prio=6, layers="0..3", eligible=1, slot=7, push_bp=5000, pull_bp=5000, threshold=0)
    s.add("add GradIngress.dscp_class 1 hdr.ipv4.diffserv:0x0a&&&0x3f "
          "GradIngress.set_dscp_class(prio:5, drop_threshold:3)")
    qidx = 2 * 8 + 5
    s.comment(f"PLAIN DATA, DSCP 10 ECT(0) (TOS 0x2a): queue 5 of port 2 ({qidx}), forwarded untouched "
              "(no telemetry, UDP checksum kept), even with the class queue congested")
    s.add(f"register_write qdepth_reg {2 * 8 + 6} 99")
    frame = grad_frame(Grad(flags=PLAIN, layer_id=1), tos=0x2A)
    s.packet(1, frame)
    s.expect(2, routed(frame, ROUTER_MAC, H2_MAC, grad=False))
    s.comment("PLAIN DATA Not-ECT (TOS 0x28) above the DSCP threshold: dropped as ordinary traffic")
    s.add(f"register_write qdepth_reg {qidx} 7")
    s.packet(1, grad_frame(Grad(flags=PLAIN, layer_id=1, chunk_seq=1), tos=0x28))
    s.comment("PLAIN CRITICAL DATA and a PLAIN control kind are never dropped selectively")
    for g in (Grad(flags=PLAIN | CRITICAL, layer_id=1, chunk_seq=2), Grad(kind=1, flags=PLAIN)):
        s.add(f"register_write qdepth_reg {qidx} 7")
        frame = grad_frame(g, tos=0x28)
        s.packet(1, frame)
        s.expect(2, routed(frame, ROUTER_MAC, H2_MAC, grad=False))
    s.comment("PLAIN without a DSCP entry: priority 0 (index 16)")
    frame = grad_frame(Grad(flags=PLAIN, layer_id=1, chunk_seq=3))
    s.packet(1, frame)
    s.expect(2, routed(frame, ROUTER_MAC, H2_MAC, grad=False))
    s.add("wait")
    s.add("check_counter GradIngress.slot_seen_ctr(7) packets == 0")
    s.add("check_counter GradIngress.slot_dropped_ctr(7) packets == 0")
    s.add(f"check_counter GradIngress.queue_dropped_ctr({qidx}) packets == 1")
    s.add(f"check_counter GradEgress.queue_tx_ctr({qidx}) packets == 3")
    s.add("check_counter GradEgress.queue_tx_ctr(16) packets == 1")
    s.add("check_counter GradEgress.queue_tx_ctr(22) packets == 0")
    return s


def job_features() -> Scenario:
    s = Scenario("job_features", "per-job ablation switches: priority off queues DATA as ordinary "
                                 "traffic, selective drop off counts but never drops")
    _routes(s)
    for job in (1, 2):
        _class(s, prio=6, layers="0..3", eligible=1, slot=job, push_bp=5000, pull_bp=5000,
               threshold=4, job=job)
    s.add("add GradIngress.dscp_class 1 hdr.ipv4.diffserv:0x0a&&&0x3f "
          "GradIngress.set_dscp_class(prio:3, drop_threshold:100)")
    s.add("add GradIngress.job_features hdr.gradient.job_id:0x0002 "
          "GradIngress.set_job_features(spray:1, priority:0, selective_drop:0)")
    s.add("add GradIngress.job_features hdr.gradient.job_id:0x0001 "
          "GradIngress.set_job_features(spray:1, priority:1, selective_drop:1)")
    s.comment("job 1 (all on): class queue 6 (index 22); job 2 (priority off): its DSCP queue, "
              "3 for TOS 0x28 (index 19), 0 without DSCP (index 16)")
    _send_grad(s, Grad(job_id=1, layer_id=0), tos=0x28)
    _send_grad(s, Grad(job_id=2, layer_id=0), tos=0x28)
    _send_grad(s, Grad(job_id=2, layer_id=0, chunk_seq=1))
    s.comment("congested queue, bound 50 %: job 1 drops its 2nd and 4th packet, job 2 none; "
              "job 2's budget keeps the class's drop threshold (4), not the DSCP entry's")
    for seq in range(4):
        s.add(f"register_write qdepth_reg {2 * 8 + 6} 10")
        _send_grad(s, Grad(job_id=1, layer_id=1, round=2, chunk_seq=seq), dropped=seq in (1, 3))
    for seq in range(4):
        s.add(f"register_write qdepth_reg {2 * 8 + 0} 10")
        _send_grad(s, Grad(job_id=2, layer_id=1, round=2, chunk_seq=seq))
    s.add("wait")
    s.add("check_counter GradEgress.queue_tx_ctr(22) packets == 3")
    s.add("check_counter GradEgress.queue_tx_ctr(19) packets == 1")
    s.add("check_counter GradEgress.queue_tx_ctr(16) packets == 5")
    s.add("check_counter GradIngress.slot_seen_ctr(1) packets == 5")
    s.add("check_counter GradIngress.slot_dropped_ctr(1) packets == 2")
    s.add("check_counter GradIngress.slot_seen_ctr(2) packets == 6")
    s.add("check_counter GradIngress.slot_dropped_ctr(2) packets == 0")
    return s


def dscp_fallback() -> Scenario:
    s = Scenario("dscp_fallback", "packets without the gradient header: DSCP picks the queue, "
                                  "Not-ECT is drop-eligible above the threshold, ECT never is")
    _routes(s)
    s.add("add GradIngress.dscp_class 1 hdr.ipv4.diffserv:0x0a&&&0x3f "
          "GradIngress.set_dscp_class(prio:5, drop_threshold:3)")
    qidx = 3 * 8 + 5
    s.comment(f"DSCP 10 (TOS 0x28), Not-ECT, uncongested -> forwarded on queue 5 of port 3 ({qidx})")
    frame = udp_frame(5000, tos=0x28, dst_ip=H3_IP)
    s.packet(1, frame)
    s.expect(3, routed(frame, ROUTER_MAC, H3_MAC, grad=False))
    s.comment("congested (depth 7 > 3): Not-ECT dropped, ECT(0) (TOS 0x2a) forwarded")
    s.add(f"register_write qdepth_reg {qidx} 7")
    s.packet(1, frame)
    s.add(f"register_write qdepth_reg {qidx} 7")
    ect = udp_frame(5000, tos=0x2A, dst_ip=H3_IP)
    s.packet(1, ect)
    s.expect(3, routed(ect, ROUTER_MAC, H3_MAC, grad=False))
    s.comment("no DSCP entry (DSCP 0): priority 0, infinite threshold, never dropped")
    s.add("register_write qdepth_reg 24 99")
    plain = udp_frame(5000, tos=0x00, dst_ip=H3_IP)
    s.packet(1, plain)
    s.expect(3, routed(plain, ROUTER_MAC, H3_MAC, grad=False))
    s.add("wait")
    s.add(f"check_counter GradIngress.queue_dropped_ctr({qidx}) packets == 1")
    s.add(f"check_counter GradEgress.queue_tx_ctr({qidx}) packets == 2")
    s.add("check_counter GradEgress.queue_tx_ctr(24) packets == 1")
    return s


def pcn_counting() -> Scenario:
    s = Scenario("pcn_counting", "PCN-START raises the egress port's pending count and sets its "
                                 "threshold; the burst's first push DATA packet lowers it")
    _routes(s)
    s.add("add GradEgress.ecn_config standard_metadata.egress_port:2 "
          "GradEgress.set_ecn_thresholds(normal:40, pcn:10)")
    s.comment("PCN-START (TOS 0x80 | threshold 3 << 2 = 0x8c) from worker 1, job 1, kind PULL_REQ-free "
              "control kind 6: count 1, threshold 15")
    start = Grad(kind=6, worker_rank=1, round=7)
    _send_grad(s, start, tos=0x8C)
    s.add("register_read GradEgress.pcn_count 2 1")
    s.add("register_read GradEgress.pcn_threshold 2 15")
    s.comment("a START with threshold bits 0 uses the table's pcn value (10): count 2")
    _send_grad(s, Grad(kind=6, worker_rank=2, round=7), tos=0x80)
    s.add("register_read GradEgress.pcn_count 2 2")
    s.add("register_read GradEgress.pcn_threshold 2 10")
    s.comment("worker 1's first push DATA of round 7 arrives: count 1; its next packets do not count")
    _send_grad(s, Grad(worker_rank=1, round=7, chunk_seq=0))
    _send_grad(s, Grad(worker_rank=1, round=7, chunk_seq=1))
    s.add("register_read GradEgress.pcn_count 2 1")
    s.comment("pull-stage DATA never counts as an arrival")
    _send_grad(s, Grad(flags=PULL, worker_rank=2, round=7))
    s.add("register_read GradEgress.pcn_count 2 1")
    s.comment("worker 2's push DATA: count 0")
    _send_grad(s, Grad(worker_rank=2, round=7))
    s.add("register_read GradEgress.pcn_count 2 0")
    s.comment("a non-gradient packet with TOS 0x80 is not a START (its DSCP is not read as PCN)")
    other = udp_frame(5000, tos=0x80)
    s.packet(1, other)
    s.expect(2, routed(other, ROUTER_MAC, H2_MAC, grad=False))
    s.add("register_read GradEgress.pcn_count 2 0")
    s.add("wait")
    s.add("check_counter GradEgress.pcn_start_ctr(2) packets == 2")
    s.add("check_counter GradEgress.pcn_arrival_ctr(2) packets == 2")
    return s


def pcn_resend() -> Scenario:
    s = Scenario("pcn_resend", "a PCN-START counts once per (job, worker, round) however often it "
                               "is resent; a newer round's START replaces one whose burst never "
                               "came; a count expires")
    _routes(s)
    s.add("add GradEgress.ecn_config standard_metadata.egress_port:2 "
          "GradEgress.set_ecn_thresholds(normal:40, pcn:10)")
    s.comment("worker 1 sends the START of round 7 three times (lost ACKs): count 1")
    for _ in range(3):
        _send_grad(s, Grad(kind=6, worker_rank=1, round=7), tos=0x80)
    s.add("register_read GradEgress.pcn_count 2 1")
    s.comment("worker 2's START of round 7, resent once: count 2")
    for _ in range(2):
        _send_grad(s, Grad(kind=6, worker_rank=2, round=7), tos=0x80)
    s.add("register_read GradEgress.pcn_count 2 2")
    s.comment("worker 1's burst of round 7 never came; its START of round 8 replaces it: count 2")
    _send_grad(s, Grad(kind=6, worker_rank=1, round=8), tos=0x80)
    s.add("register_read GradEgress.pcn_count 2 2")
    s.comment("a late packet of worker 1's round 7 no longer counts; its round 8 burst does: count 1")
    _send_grad(s, Grad(worker_rank=1, round=7))
    s.add("register_read GradEgress.pcn_count 2 2")
    _send_grad(s, Grad(worker_rank=1, round=8))
    s.add("register_read GradEgress.pcn_count 2 1")
    s.comment("a push DATA packet of a worker that sent no START does not count: count 1")
    _send_grad(s, Grad(worker_rank=3, round=7))
    s.add("register_read GradEgress.pcn_count 2 1")
    s.comment("worker 2's burst (a PLAIN one: PCN is the host's own choice) ends it: count 0")
    _send_grad(s, Grad(flags=PLAIN, worker_rank=2, round=7))
    s.add("register_read GradEgress.pcn_count 2 0")
    s.comment("port 3 lets a count expire after 1 us: a START counts 1, the next packet leaving "
              "the port finds it expired")
    s.add("add GradEgress.pcn_config standard_metadata.egress_port:3 GradEgress.set_pcn_expiry(expiry_us:1)")
    _send_grad(s, Grad(kind=6, worker_rank=4, round=1), tos=0x80, dst_ip=H3_IP, dst_mac=H3_MAC, port_out=3)
    s.add("register_read GradEgress.pcn_count 3 1")
    other = udp_frame(5000, dst_ip=H3_IP)
    s.packet(1, other)
    s.expect(3, routed(other, ROUTER_MAC, H3_MAC, grad=False))
    s.add("register_read GradEgress.pcn_count 3 0")
    s.add("register_read GradEgress.pcn_epoch 3 1")
    s.add("wait")
    s.add("check_counter GradEgress.pcn_start_ctr(2) packets == 3")
    s.add("check_counter GradEgress.pcn_arrival_ctr(2) packets == 2")
    s.add("check_counter GradEgress.pcn_start_ctr(3) packets == 1")
    s.add("check_counter GradEgress.pcn_expired_ctr(3) packets == 1")
    return s


def forwarding() -> Scenario:
    s = Scenario("forwarding", "ARP answers for configured addresses, LPM routing, TTL expiry, "
                               "non-IPv4 dropped")
    _routes(s)
    gw = 0x0A0001FE
    s.add(f"add GradIngress.arp_responder hdr.arp.oper:1 hdr.arp.tpa:0x{gw:08x} "
          f"GradIngress.arp_reply(mac:0x{ROUTER_MAC:012x})")
    req = (_mac(0xFFFFFFFFFFFF) + _mac(H1_MAC) + b"\x08\x06" +
           struct.pack("!HHBBH", 1, 0x0800, 6, 4, 1) + _mac(H1_MAC) + H1_IP.to_bytes(4, "big") +
           bytes(6) + gw.to_bytes(4, "big"))
    reply = (_mac(H1_MAC) + _mac(ROUTER_MAC) + b"\x08\x06" +
             struct.pack("!HHBBH", 1, 0x0800, 6, 4, 2) + _mac(ROUTER_MAC) + gw.to_bytes(4, "big") +
             _mac(H1_MAC) + H1_IP.to_bytes(4, "big"))
    s.comment("who-has 10.0.1.254 from h1 on port 1 -> the switch answers on port 1")
    s.packet(1, req)
    s.expect(1, reply.hex())
    s.comment("who-has an address nobody configured -> dropped")
    s.packet(1, req[:-4] + (0x0A0001FD).to_bytes(4, "big"))
    s.comment("IPv4 to h3 routed out of port 3; TTL 1 dropped; unknown destination dropped")
    frame = udp_frame(5000, dst_ip=H3_IP)
    s.packet(1, frame)
    s.expect(3, routed(frame, ROUTER_MAC, H3_MAC, grad=False))
    s.packet(1, udp_frame(5000, dst_ip=H3_IP, ttl=1))
    s.packet(1, udp_frame(5000, dst_ip=0x0A090909))
    s.comment("an IPv6 frame is dropped")
    s.packet(1, _mac(ROUTER_MAC) + _mac(H1_MAC) + b"\x86\xdd" + bytes(40))
    s.add("wait")
    return s


def ipv4_checksum() -> Scenario:
    s = Scenario("ipv4_checksum", "IPv4 header checksums as BMv2 runs them: options are parsed by "
                                  "ihl and covered by the recomputed checksum; a header that "
                                  "arrives with a bad checksum is dropped, never re-validated")
    _routes(s)
    _class(s, prio=6, layers="0..9", eligible=0, slot=1, push_bp=0, pull_bp=0, threshold=100)
    router_alert = bytes([0x94, 0x04, 0x00, 0x00])
    s.comment("ihl 6 (router alert option): forwarded, checksum recomputed over all 24 bytes")
    frame = udp_frame(5000, dst_ip=H3_IP, options=router_alert)
    s.packet(1, frame)
    s.expect(3, routed(frame, ROUTER_MAC, H3_MAC, grad=False))
    s.comment("ihl 15 (40 bytes of options: NOPs, then end of list)")
    longest = bytes([0x01] * 39 + [0x00])
    frame = udp_frame(5000, dst_ip=H3_IP, options=longest)
    s.packet(1, frame)
    s.expect(3, routed(frame, ROUTER_MAC, H3_MAC, grad=False))
    s.comment("gradient DATA behind options: still classified (queue 6) and given telemetry")
    gframe = grad_frame(Grad(layer_id=3), options=router_alert)
    s.packet(1, gframe)
    s.expect(2, routed(gframe, ROUTER_MAC, H2_MAC, grad=True))
    s.comment("bad checksums are dropped: without options, with options, on gradient DATA")
    s.packet(1, corrupt_checksum(udp_frame(5000, dst_ip=H3_IP)))
    s.packet(1, corrupt_checksum(udp_frame(5000, dst_ip=H3_IP, options=router_alert)))
    s.packet(1, corrupt_checksum(grad_frame(Grad(layer_id=3))))
    s.comment("an options byte changed on the way (checksum left as it was): dropped")
    bad = bytearray(udp_frame(5000, dst_ip=H3_IP, options=router_alert))
    bad[34 + 2] ^= 0x01
    s.packet(1, bytes(bad))
    s.comment("ihl 4 (shorter than an IPv4 header) is dropped even with a matching checksum")
    short = bytearray(udp_frame(5000, dst_ip=H3_IP))
    short[14] = 0x44
    short[24:26] = b"\x00\x00"
    short[24:26] = struct.pack("!H", _csum(bytes(short[14:34])))
    s.packet(1, bytes(short))
    s.comment("a valid packet after them still passes")
    frame = udp_frame(5000, dst_ip=H3_IP)
    s.packet(1, frame)
    s.expect(3, routed(frame, ROUTER_MAC, H3_MAC, grad=False))
    s.add("wait")
    s.add("check_counter GradIngress.slot_seen_ctr(1) packets == 1")
    s.add("check_counter GradEgress.queue_tx_ctr(24) packets == 3")
    return s


def pcn_per_job() -> Scenario:
    s = Scenario("pcn_per_job", "two jobs on one port: each job's PCN events are counted under its "
                                "own id; a job's own threshold (pcn_job) wins over the START's "
                                "bits; while bursts are pending the lowest threshold holds")
    _routes(s)
    s.add("add GradEgress.ecn_config standard_metadata.egress_port:2 "
          "GradEgress.set_ecn_thresholds(normal:40, pcn:10)")
    s.add("add GradEgress.pcn_job hdr.gradient.job_id:0x0002 "
          "GradEgress.set_pcn_job_threshold(threshold:5)")
    s.comment("job 1, worker 1 announces a burst carrying threshold 30 (TOS 0x80 | 6 << 2): count 1")
    _send_grad(s, Grad(kind=6, job_id=1, worker_rank=1, round=3), tos=0x98)
    s.add("register_read GradEgress.pcn_threshold 2 30")
    s.comment("job 2 (same rank) carries 30 too, but its own threshold is 5: count 2, threshold 5")
    _send_grad(s, Grad(kind=6, job_id=2, worker_rank=1, round=3), tos=0x98)
    s.add("register_read GradEgress.pcn_count 2 2")
    s.add("register_read GradEgress.pcn_threshold 2 5")
    s.comment("job 1's resent START: not counted again, and the pending lower threshold holds")
    _send_grad(s, Grad(kind=6, job_id=1, worker_rank=1, round=3), tos=0x98)
    s.add("register_read GradEgress.pcn_threshold 2 5")
    s.comment("job 1's burst arrives: count 1 (job 2's burst is still pending)")
    _send_grad(s, Grad(job_id=1, worker_rank=1, round=3))
    s.add("register_read GradEgress.pcn_count 2 1")
    s.comment("job 2's burst arrives: count 0; a new job-1 START with no pending burst sets its own 30")
    _send_grad(s, Grad(job_id=2, worker_rank=1, round=3))
    s.add("register_read GradEgress.pcn_count 2 0")
    _send_grad(s, Grad(kind=6, job_id=1, worker_rank=1, round=4), tos=0x98)
    s.add("register_read GradEgress.pcn_threshold 2 30")
    s.add("wait")
    s.add("check_counter GradEgress.pcn_start_ctr(2) packets == 3")
    s.add("check_counter GradEgress.pcn_job_start_ctr(1) packets == 2")
    s.add("check_counter GradEgress.pcn_job_start_ctr(2) packets == 1")
    s.add("check_counter GradEgress.pcn_job_arrival_ctr(1) packets == 1")
    s.add("check_counter GradEgress.pcn_job_arrival_ctr(2) packets == 1")
    return s


def pcn_ddl_flow() -> Scenario:
    s = Scenario("pcn_ddl_flow", "a DDL flow without the gradient header (kernel TCP) that the "
                                 "controller ties to (job, worker): its first packet after that "
                                 "worker's counted PCN-START is the burst's arrival")
    _routes(s)
    s.add("add GradEgress.ecn_config standard_metadata.egress_port:2 "
          "GradEgress.set_ecn_thresholds(normal:40, pcn:10)")
    s.add(f"add GradEgress.ddl_flow 1 hdr.ipv4.srcAddr:0x{H1_IP:08x}&&&0xffffffff "
          "hdr.ipv4.dstAddr:0x00000000&&&0x00000000 hdr.ipv4.protocol:0x06&&&0xff "
          "meta.l4_dst:5002..5002 GradEgress.set_ddl_sender(job_id:1, worker_rank:1)")

    def send_tcp(dport: int) -> None:
        frame = tcp_frame(dport)
        s.packet(1, frame)
        s.expect(2, routed(frame, ROUTER_MAC, H2_MAC, grad=False))

    s.comment("the flow's packets with no START pending change nothing")
    send_tcp(5002)
    s.add("register_read GradEgress.pcn_count 2 0")
    s.comment("worker 1 of job 1 announces round 7: count 1, threshold 10")
    _send_grad(s, Grad(kind=6, worker_rank=1, round=7), tos=0x80)
    s.add("register_read GradEgress.pcn_count 2 1")
    s.comment("background TCP (port 5001) is not the DDL flow: still pending")
    send_tcp(5001)
    s.add("register_read GradEgress.pcn_count 2 1")
    s.comment("the DDL flow's first packet is the burst's arrival: count 0; its next one does not count")
    send_tcp(5002)
    s.add("register_read GradEgress.pcn_count 2 0")
    send_tcp(5002)
    s.comment("the next round's START, then the flow again: counted once more")
    _send_grad(s, Grad(kind=6, worker_rank=1, round=8), tos=0x80)
    s.add("register_read GradEgress.pcn_count 2 1")
    send_tcp(5002)
    s.add("register_read GradEgress.pcn_count 2 0")
    s.comment("a START of another worker (rank 2) is not ended by worker 1's flow")
    _send_grad(s, Grad(kind=6, worker_rank=2, round=8), tos=0x80)
    send_tcp(5002)
    s.add("register_read GradEgress.pcn_count 2 1")
    s.add("wait")
    s.add("check_counter GradEgress.pcn_start_ctr(2) packets == 3")
    s.add("check_counter GradEgress.pcn_arrival_ctr(2) packets == 2")
    s.add("check_counter GradEgress.pcn_job_arrival_ctr(1) packets == 2")
    return s


def job_budgets() -> Scenario:
    s = Scenario("job_budgets", "two jobs through one congested queue: each job's drops are charged "
                                "to its own slot's budget and counters, never to the other's; "
                                "packets that meet a deep queue are counted per slot")
    _routes(s)
    _class(s, prio=2, layers="0..3", eligible=1, slot=1, push_bp=2500, pull_bp=2500, threshold=4, job=1)
    _class(s, prio=2, layers="0..3", eligible=1, slot=2, push_bp=5000, pull_bp=5000, threshold=4, job=2)
    qidx = 2 * 8 + 2
    s.comment("same queue, same rank, same round, congested before every packet (depth 10 > 4)")
    s.comment("job 1 (25 %): its 4th and 8th are dropped; job 2 (50 %): its 2nd, 4th, 6th, 8th")
    for seq in range(8):
        for job, drops in ((1, (3, 7)), (2, (1, 3, 5, 7))):
            s.add(f"register_write qdepth_reg {qidx} 10")
            _send_grad(s, Grad(job_id=job, layer_id=1, round=2, chunk_seq=seq), dropped=seq in drops)
    s.add(f"register_read GradIngress.budget_seen {budget(1)} 8")
    s.add(f"register_read GradIngress.budget_dropped {budget(1)} 2")
    s.add(f"register_read GradIngress.budget_seen {budget(2)} 8")
    s.add(f"register_read GradIngress.budget_dropped {budget(2)} 4")
    s.comment("an uncongested packet of job 1 (depth 0) is seen, not counted as congested")
    s.add(f"register_write qdepth_reg {qidx} 0")
    _send_grad(s, Grad(job_id=1, layer_id=1, round=2, chunk_seq=8))
    s.add("wait")
    s.add("check_counter GradIngress.slot_seen_ctr(1) packets == 9")
    s.add("check_counter GradIngress.slot_dropped_ctr(1) packets == 2")
    s.add("check_counter GradIngress.slot_congested_ctr(1) packets == 8")
    s.add("check_counter GradIngress.slot_seen_ctr(2) packets == 8")
    s.add("check_counter GradIngress.slot_dropped_ctr(2) packets == 4")
    s.add("check_counter GradIngress.slot_congested_ctr(2) packets == 8")
    return s


SCENARIOS = (forwarding, priority_by_class, bounded_drop, policy_epoch, stage_budgets,
             critical_never_dropped, plain_traffic, job_features, dscp_fallback, pcn_counting,
             pcn_resend, pcn_per_job, pcn_ddl_flow, job_budgets, ipv4_checksum)
P4_STUB = "// gradlane's data plane under test ({name}.stf)\n#include \"../../../p4src/gradlane.p4\"\n"


def render() -> dict[str, str]:
    """File name -> content of every generated file."""
    out = {}
    for make in SCENARIOS:
        s = make()
        out[f"{s.name}.stf"] = s.text()
        out[f"{s.name}.p4"] = P4_STUB.format(name=s.name)
    return out


def main() -> int:
    for name, text in render().items():
        (HERE / name).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
