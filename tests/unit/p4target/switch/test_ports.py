"""Switch ports: delay line scheduling, impairments on egress (loss, bursts, delay), pcap
capture, --use-files replay (AF_PACKET ports on a real veth pair:
tests/integration/p4target/switch/test_ports_veth.py)."""
import os
import queue
import threading
import time

import pytest

from p4target.switch.links.delay_line import DelayLine
from p4target.switch.links.impairments import parse_impairment
from p4target.switch.pcap import PcapWriter, read_pcap
from p4target.switch.ports import PortError, SwitchPorts


def frame(n: int, size: int = 60) -> bytes:
    """An Ethernet frame carrying sequence number n."""
    head = bytes.fromhex("020000000001" "020000000002" "88b5") + n.to_bytes(4, "big")
    return head + bytes(size - len(head))


def seq(data: bytes) -> int:
    return int.from_bytes(data[14:18], "big")


# -- delay line ----------------------------------------------------------------------------
def test_delay_line_sends_in_due_order_not_arrival_order():
    sent = queue.Queue()
    line = DelayLine(lambda port, data: sent.put((time.monotonic(), port, data)))
    line.start()
    try:
        t0 = time.monotonic()
        line.schedule(1, b"late", 0.12)
        line.schedule(2, b"early", 0.03)
        line.schedule(3, b"now", 0.0)
        got = [sent.get(timeout=2) for _ in range(3)]
    finally:
        line.stop()
    assert [g[2] for g in got] == [b"now", b"early", b"late"]
    assert [g[1] for g in got] == [3, 2, 1]
    assert got[1][0] - t0 >= 0.03 - 1e-3
    assert got[2][0] - t0 >= 0.12 - 1e-3


def test_delay_line_stop_discards_frames_not_yet_due():
    sent = []
    line = DelayLine(lambda port, data: sent.append(data))
    line.start()
    line.schedule(1, b"x", 10.0)
    line.schedule(1, b"y", 10.0)
    assert line.pending() == 2
    assert line.stop() == 2
    assert sent == []


def test_delay_line_equal_due_times_keep_arrival_order():
    sent = queue.Queue()
    clock = [100.0]
    line = DelayLine(lambda port, data: sent.put(data), clock=lambda: clock[0])
    for i in range(5):
        line.schedule(1, bytes([i]), 0.0)
    line.start()
    try:
        assert [sent.get(timeout=2) for _ in range(5)] == [bytes([i]) for i in range(5)]
    finally:
        line.stop()


# -- file ports (no root needed) -----------------------------------------------------------
def write_inputs(base: str, frames_by_time: list[tuple[float, bytes]]) -> None:
    with PcapWriter(base + "_in.pcap") as w:
        for stamp, data in frames_by_time:
            w.write(data, timestamp=stamp)


def file_ports(tmp_path, impairments=(), seed=7, wait=0, on_frame=None, ports=(1, 2)):
    ifaces = {}
    for p in ports:
        base = str(tmp_path / f"p{p}")
        if not os.path.exists(base + "_in.pcap"):
            write_inputs(base, [])
        ifaces[p] = base
    imps = dict(parse_impairment(s) for s in impairments)
    return SwitchPorts(ifaces, on_frame or (lambda port, data: None), impairments=imps,
                       use_files_wait=wait, seed=seed)


def out_records(tmp_path, port):
    return list(read_pcap(str(tmp_path / f"p{port}_out.pcap")))


def test_loss_drops_about_the_given_fraction_and_counts_drops(tmp_path):
    sp = file_ports(tmp_path, impairments=["2:loss=0.3"])
    sp.start()
    for i in range(1000):
        sp.transmit(2, frame(i))
        sp.transmit(1, frame(i))
    stats2, stats1 = sp.stats(2), sp.stats(1)
    sp.stop()
    kept = out_records(tmp_path, 2)
    assert 600 <= len(kept) <= 800  # binomial(1000, 0.7): mean 700, sd 14.5
    assert stats2.impairment_drops + len(kept) == 1000
    assert stats2.transmitted == len(kept)
    assert len(out_records(tmp_path, 1)) == 1000 and stats1.impairment_drops == 0
    # survivors keep their order
    seqs = [seq(r.data) for r in kept]
    assert seqs == sorted(seqs)


def test_same_seed_same_loss_pattern(tmp_path):
    patterns = []
    for run in range(2):
        d = tmp_path / f"run{run}"
        d.mkdir()
        sp = file_ports(d, impairments=["1:loss=0.5"], seed=42, ports=(1,))
        sp.start()
        for i in range(200):
            sp.transmit(1, frame(i))
        sp.stop()
        patterns.append([seq(r.data) for r in out_records(d, 1)])
    assert patterns[0] == patterns[1]


def test_loss_burst_drops_only_inside_its_window(tmp_path):
    sp = file_ports(tmp_path, impairments=["1:burst=0.2s+0.3s@1"], ports=(1,))
    sp.start()
    t0 = time.monotonic()
    sent_at = {}
    i = 0
    while time.monotonic() - t0 < 0.7:
        sent_at[i] = time.monotonic() - t0
        sp.transmit(1, frame(i))
        i += 1
        time.sleep(0.01)
    sp.stop()
    kept = {seq(r.data) for r in out_records(tmp_path, 1)}
    # clearly inside the window: dropped; clearly outside: kept (margins absorb scheduling)
    inside = [n for n, t in sent_at.items() if 0.23 <= t <= 0.47]
    outside = [n for n, t in sent_at.items() if t <= 0.17 or t >= 0.53]
    assert inside and outside
    assert not kept & set(inside)
    assert set(outside) <= kept


def test_delay_holds_frames_and_jitter_stays_within_bounds(tmp_path):
    sp = file_ports(tmp_path, impairments=["1:delay=80ms", "2:delay=40ms,jitter=20ms"])
    sp.start()
    t_send = time.time()
    for i in range(20):
        sp.transmit(1, frame(i))
        sp.transmit(2, frame(i))
    deadline = time.monotonic() + 10        # the delayed frames have all gone out
    while time.monotonic() < deadline and any(c["transmitted"] < 20 for c in sp.counters().values()):
        time.sleep(0.01)
    sp.stop()
    out1, out2 = out_records(tmp_path, 1), out_records(tmp_path, 2)
    assert len(out1) == 20 and len(out2) == 20
    assert min(r.timestamp for r in out1) - t_send >= 0.08 - 2e-3
    assert min(r.timestamp for r in out2) - t_send >= 0.02 - 2e-3


def test_stop_discards_frames_still_delayed(tmp_path):
    sp = file_ports(tmp_path, impairments=["1:delay=5s"], ports=(1,))
    sp.start()
    sp.transmit(1, frame(0))
    sp.stop()
    assert out_records(tmp_path, 1) == []


def test_use_files_replays_inputs_in_time_order_without_the_gaps(tmp_path):
    """As simple_switch: merged by timestamp, fed at once (no real-time replay), so 20 s of
    capture is processed before a test driver's 2 s grace runs out."""
    write_inputs(str(tmp_path / "p1"), [(1000.0, frame(1)), (1020.0, frame(3))])
    write_inputs(str(tmp_path / "p2"), [(1010.0, frame(2))])
    got = queue.Queue()
    sp = file_ports(tmp_path, on_frame=lambda port, data: got.put((port, seq(data))))
    sp.start()
    try:
        items = [got.get(timeout=5) for _ in range(3)]
    finally:
        sp.stop()
    assert items == [(1, 1), (2, 2), (1, 3)]


def test_use_files_waits_before_processing(tmp_path):
    write_inputs(str(tmp_path / "p1"), [(5.0, frame(9))])
    got = queue.Queue()
    sp = file_ports(tmp_path, wait=1, ports=(1,), on_frame=lambda port, data: got.put(time.monotonic()))
    t0 = time.monotonic()
    sp.start()
    try:
        assert got.get(timeout=5) - t0 >= 0.95
    finally:
        sp.stop()


def test_use_files_missing_input_is_a_port_error(tmp_path):
    with pytest.raises(PortError, match="p9_in.pcap"):
        SwitchPorts({9: str(tmp_path / "p9")}, lambda p, d: None, use_files_wait=0)


def test_impairment_on_a_port_without_interface_is_rejected(tmp_path):
    write_inputs(str(tmp_path / "p1"), [])
    with pytest.raises(PortError, match="port 4"):
        SwitchPorts({1: str(tmp_path / "p1")}, lambda p, d: None, use_files_wait=0,
                    impairments=dict([parse_impairment("4:loss=0.1")]))


def test_transmit_to_unknown_port_is_dropped(tmp_path):
    sp = file_ports(tmp_path, ports=(1,))
    sp.start()
    sp.transmit(77, frame(0))  # e.g. the CPU port without an interface
    sp.stop()
    assert out_records(tmp_path, 1) == []


def test_use_files_streams_fifo_inputs_as_bmv2_does(tmp_path):
    """p4c's STF runner makes the inputs FIFOs, opens them after starting the switch (in port
    order) and writes packets while the switch runs: opening waits for the writer, each packet
    is processed as it arrives, and the input ends when the writer closes."""
    bases = {p: str(tmp_path / f"pcap{p}") for p in (0, 1)}
    for base in bases.values():
        os.mkfifo(base + "_in.pcap")
    got: queue.Queue = queue.Queue()
    made: list = []
    opener = threading.Thread(target=lambda: made.append(
        SwitchPorts(bases, lambda port, data: got.put((port, seq(data))), use_files_wait=0)))
    opener.start()
    writers: dict = {}
    runner = threading.Thread(target=lambda: writers.update(  # in port order, as the runner does
        {p: PcapWriter(bases[p] + "_in.pcap") for p in (0, 1)}), daemon=True)
    runner.start()
    opener.join(timeout=10)
    runner.join(timeout=10)
    assert made and len(writers) == 2, "the switch's ports did not open the FIFOs"
    sp = made[0]
    sp.start()
    try:
        writers[0].write(frame(1))
        writers[1].write(frame(2))
        assert got.get(timeout=5) == (0, 1)  # while the FIFOs are still open
        writers[0].write(frame(3))
        writers[0].close()
        writers[1].close()
        assert {got.get(timeout=5), got.get(timeout=5)} == {(1, 2), (0, 3)}
    finally:
        sp.stop()
        for w in writers.values():
            w.close()


def test_use_files_stop_while_waiting_for_fifo_input(tmp_path):
    base = str(tmp_path / "p0")
    os.mkfifo(base + "_in.pcap")
    made: list = []
    opener = threading.Thread(target=lambda: made.append(SwitchPorts({0: base}, lambda p, d: None, use_files_wait=0)))
    opener.start()
    writer = PcapWriter(base + "_in.pcap")
    opener.join(timeout=10)
    sp = made[0]
    sp.start()
    sp.stop()  # the reader is blocked on an open, empty FIFO: stopping must not hang
    writer.close()
    assert not [t for t in threading.enumerate() if t.name == "p4target-rx" and t.is_alive()]


