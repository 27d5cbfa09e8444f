"""ns-3's own TCP for the baselines: congestion control, ECN, minimum RTO, segment size.

Settings are ns-3 attribute defaults, so they apply to the sockets created after
:func:`configure` (one simulation's sockets: set them before building its applications).
"""
from __future__ import annotations

from dataclasses import dataclass

from sim import engine
from sim.errors import SimError

# the experiments' --tcp-cc names -> ns-3's congestion controls
CONGESTION_CONTROLS = {"reno": "ns3::TcpNewReno", "newreno": "ns3::TcpNewReno", "cubic": "ns3::TcpCubic",
                       "dctcp": "ns3::TcpDctcp", "bbr": "ns3::TcpBbr"}


@dataclass(frozen=True)
class TcpSettings:
    """One arm's TCP, with Linux's defaults where ns-3's differ (minimum RTO, delayed ACK,
    data retries); SACK on as in Linux."""

    cc: str = "cubic"
    ecn: bool = False
    min_rto_ms: float = 200.0
    segment_bytes: int = 1448
    buffer_bytes: int = 4 * 1024 * 1024
    initial_cwnd: int = 10
    sack: bool = True
    data_retries: int = 15          # Linux's tcp_retries2 (ns-3's default 6 gives up sooner)
    # Linux's minimum delayed-ACK timeout. ns-3's default of 200 ms, equal to the minimum RTO,
    # locked incast flows into one segment per RTO for seconds (docs/ns3.md).
    delayed_ack_ms: float = 40.0
    delayed_ack_count: int = 2      # segments per ACK (1: delayed ACKs off)
    # ns-3's RTO is max(min_rto, srtt + max(granularity, 4 rttvar)): its default 1 ms (Linux's
    # jiffy at HZ=1000) floors any tuned RTO near a millisecond; microsecond RTOs need a finer one
    clock_granularity_us: float = 1000.0

    def __post_init__(self) -> None:
        if self.cc not in CONGESTION_CONTROLS:
            raise SimError(f"TCP congestion control '{self.cc}' is not simulated "
                           f"(choose from {', '.join(sorted(CONGESTION_CONTROLS))})")
        if not self.min_rto_ms > 0:
            raise SimError(f"min_rto_ms {self.min_rto_ms} is not a time > 0")
        if self.delayed_ack_count < 1:
            raise SimError(f"delayed_ack_count {self.delayed_ack_count} is not at least 1")
        if not self.clock_granularity_us > 0:
            raise SimError(f"clock_granularity_us {self.clock_granularity_us} is not a time > 0")
        if not 536 <= self.segment_bytes <= 8948:
            raise SimError(f"segment_bytes {self.segment_bytes} is not in 536..8948")


def configure(settings: TcpSettings) -> None:
    """Make `settings` the defaults of every TCP socket created from now on."""
    ns = engine.ns3()
    dctcp = settings.cc == "dctcp"
    defaults = {
        "ns3::TcpL4Protocol::SocketType": ns.TypeIdValue(ns.TypeId.LookupByName(CONGESTION_CONTROLS[settings.cc])),
        "ns3::TcpSocketBase::MinRto": ns.TimeValue(ns.MicroSeconds(int(settings.min_rto_ms * 1000))),
        "ns3::TcpSocketBase::UseEcn": ns.StringValue("On" if settings.ecn or dctcp else "Off"),
        "ns3::TcpSocketBase::ClockGranularity": ns.TimeValue(ns.NanoSeconds(int(settings.clock_granularity_us * 1000))),
        "ns3::TcpSocketBase::Sack": ns.BooleanValue(settings.sack),
        "ns3::TcpSocket::DataRetries": ns.UintegerValue(settings.data_retries),
        "ns3::TcpSocket::DelAckCount": ns.UintegerValue(settings.delayed_ack_count),
        "ns3::TcpSocket::DelAckTimeout": ns.TimeValue(ns.MicroSeconds(int(settings.delayed_ack_ms * 1000))),
        "ns3::TcpSocket::SegmentSize": ns.UintegerValue(settings.segment_bytes),
        "ns3::TcpSocket::SndBufSize": ns.UintegerValue(settings.buffer_bytes),
        "ns3::TcpSocket::RcvBufSize": ns.UintegerValue(settings.buffer_bytes),
        "ns3::TcpSocket::InitialCwnd": ns.UintegerValue(settings.initial_cwnd),
    }
    for name, value in defaults.items():
        ns.Config.SetDefault(name, value)
