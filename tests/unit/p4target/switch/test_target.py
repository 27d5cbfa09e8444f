"""SwitchTarget: live pipeline swap, TM settings surviving pushes, CPU-port packet I/O, digests."""
import queue
import threading

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from p4target.engine import Lpm, ProgramLoadError
from p4target.engine.sample_programs import l3_router
from p4target.switch.target import NoCpuPortError, NoPipelineError, SwitchTarget

LPM = "MyIngress.ipv4_lpm"
FWD = "MyIngress.ipv4_forward"


def frame(dst="10.0.1.5") -> bytes:
    return bytes(Ether(dst="00:00:00:00:00:01", src="00:00:00:00:00:02") /
                 IP(src="10.0.0.1", dst=dst) / UDP(sport=1, dport=2) / b"payload")


class Sink:
    """Collects (port, frame) transmitted by the target."""

    def __init__(self) -> None:
        self.q: queue.Queue = queue.Queue()

    def __call__(self, port: int, data: bytes) -> None:
        self.q.put((port, data))

    def get(self, timeout: float = 2.0):
        return self.q.get(timeout=timeout)

    def empty_after(self, seconds: float = 0.2) -> bool:
        try:
            self.q.get(timeout=seconds)
        except queue.Empty:
            return True
        return False


@pytest.fixture
def sink():
    return Sink()


@pytest.fixture
def target(sink):
    t = SwitchTarget(cpu_port=64, transmit=sink)
    yield t
    t.stop()


def test_frames_dropped_without_pipeline(target, sink):
    assert target.engine is None and target.p4info is None
    target.receive(1, frame())
    assert sink.empty_after()
    with pytest.raises(NoPipelineError):
        target.packet_out(frame())


def test_live_forwarding_after_pipeline_set(target, sink):
    target.set_pipeline(l3_router())
    with target.lock:
        target.engine.table_add(LPM, [Lpm(0x0A000100, 24)], FWD, [0xAABBCCDDEEFF, 3])
    target.receive(1, frame())
    port, data = sink.get()
    assert port == 3 and Ether(data).dst == "aa:bb:cc:dd:ee:ff"


def test_repush_replaces_state_and_stops_old_engine(target, sink):
    target.set_pipeline(l3_router(), p4info="first")
    old = target.engine
    old.table_add(LPM, [Lpm(0x0A000100, 24)], FWD, [1, 3])
    target.set_pipeline(l3_router(), p4info="second")
    assert target.engine is not old and target.p4info == "second"
    assert target.engine.table_entries(LPM) == []
    assert old.tm._thread is None  # the old scheduler thread is gone
    target.receive(1, frame())  # default action drops
    assert sink.empty_after()


def test_bad_program_keeps_old_pipeline(target):
    target.set_pipeline(l3_router())
    eng = target.engine
    with pytest.raises(ProgramLoadError):
        target.set_pipeline({"header_types": "nonsense"})
    assert target.engine is eng


def test_tm_settings_survive_pipeline_push(sink):
    t = SwitchTarget(priority_queues=2, transmit=sink)
    try:
        t.set_queue_depth(7, port=3)            # before any pipeline: remembered
        t.set_pipeline(l3_router())
        t.set_queue_rate(100, port=3, priority=1)
        t.set_port_rate(50, port=4)
        t.set_port_byte_rate(125_000.0, port=4)
        t.set_pipeline(l3_router())
        tm = t.engine.tm
        assert tm.port_byte_rate(4) == 125_000.0
        qs = tm._port(3)
        assert [q.depth for q in qs] == [7, 7]
        assert qs[0].pps is None and qs[1].pps == 100
        tm._port(4)
        assert tm.shapers[4].pps == 50
        # a switch-wide depth supersedes the per-port one, also after a push
        t.set_queue_depth(9)
        t.set_pipeline(l3_router())
        assert [q.depth for q in t.engine.tm._port(3)] == [9, 9]
    finally:
        t.stop()


def test_queue_rate_applies_to_live_traffic(target, sink):
    target.set_pipeline(l3_router())
    target.set_queue_rate(20, port=3)
    target.engine.table_add(LPM, [Lpm(0x0A000100, 24)], FWD, [1, 3])
    for _ in range(3):
        target.receive(1, frame())
    got = [sink.get() for _ in range(2)]
    assert all(p == 3 for p, _ in got)
    # 20 pps: the third packet is not out within 20 ms of the second
    assert sink.q.empty()
    assert sink.get(timeout=1.0)[0] == 3


def test_packet_in_listener_takes_cpu_port_frames(target, sink):
    target.set_pipeline(l3_router())
    target.engine.table_add(LPM, [Lpm(0x0A000100, 24)], FWD, [1, 64])
    got: queue.Queue = queue.Queue()
    target.set_packet_in_listener(got.put)
    target.receive(1, frame())
    assert Ether(got.get(timeout=2)).dst == "00:00:00:00:00:01"
    assert sink.empty_after()
    target.set_packet_in_listener(None)
    target.receive(1, frame())
    assert sink.get()[0] == 64


def test_packet_out_enters_ingress_on_cpu_port(target, sink):
    target.set_pipeline(l3_router())
    target.engine.table_add(LPM, [Lpm(0x0A000100, 24)], FWD, [1, 2])
    target.packet_out(frame())
    assert sink.get()[0] == 2
    assert target.engine.counter_read("MyIngress.rx", 64)[0] == 1


def test_packet_out_needs_cpu_port(sink):
    t = SwitchTarget(transmit=sink)
    try:
        t.set_pipeline(l3_router())
        with pytest.raises(NoCpuPortError):
            t.packet_out(frame())
    finally:
        t.stop()


def test_lock_excludes_the_data_path(target, sink):
    target.set_pipeline(l3_router())
    target.engine.table_add(LPM, [Lpm(0x0A000100, 24)], FWD, [1, 3])
    with target.lock:
        th = threading.Thread(target=target.receive, args=(1, frame()))
        th.start()
        th.join(0.2)
        assert th.is_alive()  # ingress waits for the control server
    th.join(2)
    assert sink.get()[0] == 3
