"""The port shaper in bytes per second (an extension; BMv2 counts packets only): a packet leaves
while the port's byte bucket is not in debt and then pays its length, so the port's rate in
bytes is exact for any packet size, and its rate in packets falls as packets grow. Driven on a
clock the test sets, so nothing depends on the machine's speed."""
from p4target.engine.traffic_manager import BYTE_BURST, TrafficManager


def _sent_by(size: int, rate: float, times: list[float], count: int = 40) -> list[int]:
    """Packets of `size` bytes sent by each of `times` (seconds, ascending) from a port shaped to
    `rate` bytes/s with `count` packets queued at time 0."""
    now = [0.0]
    sent: list[int] = []
    tm = TrafficManager(1, depth=count, size_of=len)
    tm.set_port_byte_rate(rate, 5)
    tm.start(lambda port, packet, *_: sent.append(port), lambda: now[0])
    try:
        for _ in range(count):
            assert tm.enqueue(5, 0, b"x" * size, 0.0)
        out = []
        step = 0
        for t in times:                  # served every 10 ms, as the scheduler would wake
            while step * 0.01 <= t + 1e-9:
                now[0] = step * 0.01 * 1e6
                tm.serve()
                step += 1
            out.append(len(sent))
        return out
    finally:
        tm.stop()


def test_a_byte_shaped_port_sends_its_rate_in_bytes_whatever_the_packet_size():
    # a full bucket (BYTE_BURST) lets two 1000-byte packets go at once, then one per second
    assert _sent_by(1000, 1000.0, [0.0, 0.4, 0.6, 1.6, 5.6]) == [2, 2, 3, 4, 8]
    # ten times smaller packets: ten times as many per second
    small = _sent_by(100, 1000.0, [0.0, 1.0, 2.0], count=100)
    assert small[0] == BYTE_BURST // 100 + 1
    assert small[2] - small[1] == 10


def test_the_byte_rate_is_off_until_set_and_can_be_lifted():
    tm = TrafficManager(1)
    assert tm.port_byte_rate(3) is None
    tm.set_port_byte_rate(125_000.0, 3)
    assert tm.port_byte_rate(3) == 125_000.0
    tm.set_port_byte_rate(None, 3)
    assert tm.port_byte_rate(3) is None
