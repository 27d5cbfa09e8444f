"""gradlane's data plane on the embedded engine, for behaviour STF cannot express: per-packet
spraying over an equal-cost group (needs action-selector groups) and ECN marking at the PCN
threshold (needs queues that really build, i.e. the live traffic manager with a slow rate)."""
from __future__ import annotations

import struct
import threading
from collections import Counter
from pathlib import Path

import pytest

from p4target.compiler import compile_file
from p4target.engine import Engine, Exact, Lpm

ROOT = Path(__file__).resolve().parents[3]


import gradlane_stf_generate as _g  # noqa: E402  (loaded by conftest.py)

H1_IP, H2_IP, H2_MAC, ROUTER_MAC = _g.H1_IP, _g.H2_IP, _g.H2_MAC, _g.ROUTER_MAC
Grad, grad_frame, ipv4, udp_frame, _mac = _g.Grad, _g.grad_frame, _g.ipv4, _g.udp_frame, _g._mac


@pytest.fixture(scope="module")
def program() -> dict:
    return compile_file(str(ROOT / "p4src" / "gradlane.p4"), include_dirs=[str(ROOT / "p4src")]).bmv2_json


def _ecmp(engine: Engine, ports: list[int]) -> None:
    profile = "GradIngress.ecmp_selector"
    group = engine.act_prof_create_group(profile)
    for port in ports:
        member = engine.act_prof_add_member(profile, "GradIngress.set_nhop", [ROUTER_MAC, H2_MAC, port])
        engine.act_prof_add_member_to_group(profile, member, group)
    engine.table_add("GradIngress.ipv4_lpm", [Lpm(H2_IP, 32)], group=group)


def _tcp_frame(sport: int, seq: int) -> bytes:
    tcp = struct.pack("!HHIIBBHHH", sport, 80, seq, 0, 0x50, 0x10, 1024, 0, 0)
    return _mac(ROUTER_MAC) + _mac(0x080000000101) + b"\x08\x00" + ipv4(H1_IP, H2_IP, 6, len(tcp)) + tcp


def test_gradient_packets_are_sprayed_and_tcp_stays_on_one_path(program: dict) -> None:
    engine = Engine(program, priority_queues=8)
    _ecmp(engine, [2, 3, 4])
    grad_ports = Counter()
    for seq in range(300):
        for port, _ in engine.process(1, grad_frame(Grad(layer_id=1, chunk_seq=seq))):
            grad_ports[port] += 1
    assert set(grad_ports) == {2, 3, 4}, grad_ports
    assert min(grad_ports.values()) >= 50, grad_ports  # one flow covers every member
    tcp_ports = Counter()
    for seq in range(100):
        for port, _ in engine.process(1, _tcp_frame(43000, seq * 1000)):
            tcp_ports[port] += 1
    assert len(tcp_ports) == 1 and sum(tcp_ports.values()) == 100
    flows = {next(iter(p for p, _ in engine.process(1, _tcp_frame(sport, 0)))) for sport in range(40000, 40040)}
    assert len(flows) > 1  # different flows hash onto different members


def _marked(frames: list[bytes]) -> int:
    return sum(1 for f in frames if f[15] & 0x03 == 0x03)


def test_ecn_marks_at_the_pcn_threshold_only_while_a_burst_is_pending(program: dict) -> None:
    engine = Engine(program, priority_queues=8)
    engine.table_add("GradIngress.ipv4_lpm", [Lpm(H2_IP, 32)],
                     member=engine.act_prof_add_member("GradIngress.ecmp_selector", "GradIngress.set_nhop",
                                                       [ROUTER_MAC, H2_MAC, 2]))
    engine.table_add("GradEgress.ecn_config", [Exact(2)], "GradEgress.set_ecn_thresholds", [40, 5])
    engine.set_queue_rate(400, port=2)
    out: list[bytes] = []
    done = threading.Event()

    def transmit(port: int, data: bytes) -> None:
        out.append(data)
        if len(out) >= expected:
            done.set()

    engine.start(transmit)
    try:
        ect = udp_frame(5000, tos=0x02)  # ECT(0), DSCP 0: queue 0 of port 2
        expected = 30
        for _ in range(30):
            engine.receive(1, ect)
        assert done.wait(10)
        without_pcn = _marked(out)
        out.clear()
        done.clear()
        expected = 31
        engine.receive(1, grad_frame(Grad(kind=6, worker_rank=3, round=1), tos=0x80))  # START, thr from table
        for _ in range(30):
            engine.receive(1, ect)
        assert done.wait(10)
        with_pcn = _marked(out)
    finally:
        engine.stop()
    assert engine.register_read("GradEgress.pcn_count", 2) == 1
    assert without_pcn == 0          # depth stays below the normal threshold (40)
    assert with_pcn >= 15            # above the PCN threshold (5) once the queue passes 5 packets


def _ports_of(engine: Engine, frames: list[bytes]) -> Counter:
    ports = Counter()
    for frame in frames:
        for port, _ in engine.process(1, frame):
            ports[port] += 1
    return ports


def test_spraying_off_for_a_job_and_plain_packets_keep_one_path(program: dict) -> None:
    engine = Engine(program, priority_queues=8)
    _ecmp(engine, [2, 3, 4])
    engine.table_add("GradIngress.job_features", [Exact(2)], "GradIngress.set_job_features", [0, 1, 1])
    engine.table_add("GradIngress.job_features", [Exact(1)], "GradIngress.set_job_features", [1, 1, 1])
    sprayed = _ports_of(engine, [grad_frame(Grad(job_id=1, chunk_seq=s)) for s in range(200)])
    assert set(sprayed) == {2, 3, 4}, sprayed
    hashed = _ports_of(engine, [grad_frame(Grad(job_id=2, chunk_seq=s)) for s in range(200)])
    assert len(hashed) == 1 and sum(hashed.values()) == 200, hashed
    plain = _ports_of(engine, [grad_frame(Grad(job_id=1, flags=_g.PLAIN, chunk_seq=s)) for s in range(200)])
    assert len(plain) == 1 and sum(plain.values()) == 200, plain


def test_pcn_count_expires_and_senders_of_an_expired_count_never_decrement_the_next(program: dict) -> None:
    now = [0.0]
    engine = Engine(program, priority_queues=8, clock_us=lambda: now[0])
    engine.table_add("GradIngress.ipv4_lpm", [Lpm(H2_IP, 32)],
                     member=engine.act_prof_add_member("GradIngress.ecmp_selector", "GradIngress.set_nhop",
                                                       [ROUTER_MAC, H2_MAC, 2]))
    engine.table_add("GradEgress.ecn_config", [Exact(2)], "GradEgress.set_ecn_thresholds", [40, 5])

    def at(seconds: float, frame: bytes) -> int:
        now[0] = seconds * 1e6
        assert engine.process(1, frame), "packet not forwarded"
        return engine.register_read("GradEgress.pcn_count", 2)

    start = lambda rank, rnd: grad_frame(Grad(kind=6, worker_rank=rank, round=rnd), tos=0x80)  # noqa: E731
    data = lambda rank, rnd: grad_frame(Grad(worker_rank=rank, round=rnd))  # noqa: E731
    other = udp_frame(5000)
    assert at(1.0, start(1, 5)) == 1
    assert at(2.9, other) == 1            # default expiry: 2 s after the last counted START
    assert at(3.1, other) == 0            # worker 1's burst never came: the count expired
    assert engine.register_read("GradEgress.pcn_epoch", 2) == 1
    assert at(4.0, start(2, 5)) == 1
    assert at(4.1, data(1, 5)) == 1       # counted before the expiry: no longer decrements
    assert at(4.2, data(2, 5)) == 0
    assert engine.counter_read("GradEgress.pcn_expired_ctr", 2)[0] == 1
