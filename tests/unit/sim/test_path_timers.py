"""The lossy arms' timers from a path: one rule, stated in sim/path_timers.py."""
import pytest

from sim.path_timers import timer_flags


def _flags(*args) -> dict[str, float]:
    flags = timer_flags(*args)
    return {flags[i]: float(flags[i + 1]) for i in range(0, len(flags), 2)}


def test_each_timer_follows_the_rule():
    # 100 us RTT, a 1 Mpps bottleneck with 50 packets of queue (50 us drain), 2,000 packets pushed (2 ms)
    f = _flags(100e-6, 1e6, 50, 2000)
    assert f == pytest.approx({"--probe-ms": 0.45, "--ack-delay-ms": 0.15, "--deadline-ms": 8.0,
                               "--deadline-floor-ms": 2 + 4.5, "--deadline-ceiling-ms": 32.0,
                               "--cc-delay-ms": 0.025})


def test_the_floor_never_exceeds_the_start():
    f = _flags(10e-3, 1e6, 50, 100)      # a long path, a tiny push: ten probes outlast 4 wire times
    assert f["--deadline-floor-ms"] == f["--deadline-ms"] == pytest.approx(0.4)
