"""A bottleneck in bytes per second (`topo.run --bottleneck-bytes`, the embedded switch's
`--port-byte-rate`) is really made: through the s1 -> s2 port, full-size DATA packets pass at the
rate in bytes, and packets ten times smaller pass about ten times as often (a bottleneck in
packets per second would pass both at one packet rate)."""
import pytest

from topo.toolchain import switch_tool

RATE = 60_000.0        # bytes/s: 40 full-size frames a second, 430 small ones
FULL, SMALL = 360, 16  # float32 per packet: 1514- and 138-byte Ethernet frames
HEADERS = 14 + 20 + 8 + 32


def _arrival_rate(network_traffic, session, floats: int, count: int, send_pps: float) -> float:
    """Packets/s at the PS from the first to the last arrival of `count` packets sent at
    `send_pps` (above the bottleneck, so its queue stays full)."""
    rx = network_traffic.receiver("ps", "--idle", "2")
    network_traffic.start("w1", "send", "--dst", session.net.get("ps").IP(), "--count", str(count),
                          "--rate", str(send_pps), "--floats", str(floats), "--flags", "0x20")
    report = network_traffic.result(rx)
    got = sum(row["count"] for row in report["layers"].values())
    assert got >= 20 and report["span_s"] > 0, report
    return (got - 1) / report["span_s"]


def test_a_byte_rate_bottleneck_passes_bytes_not_packets(network, traffic):
    if switch_tool().kind != "embedded":
        pytest.skip("BMv2 has no byte rate (topo.run refuses --bottleneck-bytes there)")
    session = network("incast", workers=1, background=0, bottleneck_bytes=RATE)
    t = traffic(session)
    full = _arrival_rate(t, session, FULL, 150, 400)
    small = _arrival_rate(t, session, SMALL, 1200, 2000)
    full_pps, small_pps = RATE / (FULL * 4 + HEADERS), RATE / (SMALL * 4 + HEADERS)
    assert 0.7 * full_pps <= full <= 1.3 * full_pps, f"{full:.1f} full-size packets/s, want ~{full_pps:.1f}"
    assert small >= 5 * full, f"small packets {small:.1f}/s vs full-size {full:.1f}/s: shaped by packets?"
    assert small <= 1.3 * small_pps, f"{small:.1f} small packets/s above the byte rate (~{small_pps:.1f})"
