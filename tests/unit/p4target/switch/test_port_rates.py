"""Port rate schedule: base rates and rate bursts reach the traffic manager's port shaper on time."""
from __future__ import annotations

import queue
import time

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from p4target.engine import Lpm
from p4target.engine.sample_programs import l3_router
from p4target.switch.links.impairments import RateBurst
from p4target.switch.links.port_rates import PortRateSchedule
from p4target.switch.target import SwitchTarget


@pytest.fixture
def target():
    t = SwitchTarget(transmit=lambda port, data: None)
    t.set_pipeline(l3_router())
    yield t
    t.stop()


def shaper(target: SwitchTarget, port: int) -> float | None:
    return target.engine.tm.shapers[port].pps


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_bursts_cap_the_base_rate_only_inside_their_window(target):
    clock = Clock()
    rates = PortRateSchedule(target, clock=clock)
    rates.set_base_rate(2, 500.0)
    assert shaper(target, 2) == 500.0
    rates.set_bursts(2, (RateBurst(1.0, 0.5, 100.0), RateBurst(1.2, 1.0, 800.0)))
    assert rates.effective_rate(2) == 500.0
    clock.now += 1.1
    assert rates.effective_rate(2) == 100.0
    clock.now += 0.5  # only the 800 pps burst is on: the lower base rate still wins
    assert rates.effective_rate(2) == 500.0
    rates.set_base_rate(2, None)
    assert rates.effective_rate(2) == 800.0 and shaper(target, 2) == 800.0
    clock.now += 5
    assert rates.effective_rate(2) is None


def test_timer_thread_applies_both_edges_and_pipeline_pushes_keep_the_rate(target):
    rates = PortRateSchedule(target)
    rates.start()
    try:
        began = time.monotonic()
        rates.set_bursts(3, (RateBurst(0.3, 0.4, 50.0),), since=began)
        seen = []
        while time.monotonic() - began < 1.0:
            seen.append((time.monotonic() - began, shaper(target, 3) if 3 in target.engine.tm.shapers else None))
            time.sleep(0.02)
        inside = [pps for t, pps in seen if 0.35 < t < 0.65]
        after = [pps for t, pps in seen if t > 0.8]
        before = [pps for t, pps in seen if t < 0.25]
        assert inside and all(pps == 50.0 for pps in inside)
        assert before and all(pps is None for pps in before)
        assert after and all(pps is None for pps in after)
        rates.set_bursts(3, (RateBurst(0.0, 10.0, 75.0),))
        target.set_pipeline(l3_router())  # a new engine gets the remembered shaper rate
        assert shaper(target, 3) == 75.0
        rates.set_bursts(3, ())
        assert shaper(target, 3) is None
    finally:
        rates.stop()


def test_a_burst_set_in_the_past_is_ignored(target):
    clock = Clock()
    rates = PortRateSchedule(target, clock=clock)
    rates.set_bursts(1, (RateBurst(0.0, 1.0, 10.0),), since=clock.now - 5)
    assert rates.effective_rate(1) is None and 1 not in target.engine.tm.shapers


def test_frames_queue_in_the_traffic_manager_during_a_burst_and_drain_after_it():
    sent: queue.Queue = queue.Queue()
    target = SwitchTarget(transmit=lambda port, data: sent.put((time.monotonic(), port)))
    target.set_pipeline(l3_router())
    target.engine.table_add("MyIngress.ipv4_lpm", [Lpm(0x0A000100, 24)], "MyIngress.ipv4_forward", [1, 3])
    rates = PortRateSchedule(target)
    rates.start()
    frame = bytes(Ether(dst="ff:ff:ff:ff:ff:ff") / IP(src="10.0.0.1", dst="10.0.1.5") / UDP(sport=1, dport=2) / b"x")
    try:
        began = time.monotonic()
        rates.set_bursts(3, (RateBurst(0.0, 0.6, 10.0),), since=began)
        for _ in range(20):
            target.receive(1, frame)
        time.sleep(0.3)
        queued = target.engine.tm.depth_of(3)  # what enq_qdepth/deq_qdepth report to the program
        out = [sent.get(timeout=3) for _ in range(20)]
    finally:
        rates.stop()
        target.stop()
    assert queued >= 14  # about 3 of 20 left at 10 pps in 0.3 s
    in_burst = [t - began for t, _ in out if t - began < 0.6]
    assert 3 <= len(in_burst) <= 8 and all(port == 3 for _, port in out)
    assert out[-1][0] - began < 1.5  # the rest drained unshaped once the burst ended
