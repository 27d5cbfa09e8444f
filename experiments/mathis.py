"""Mathis et al.'s law for TCP under random loss, and the path settings of a regime.

Steady-state TCP sends about C / (RTT * sqrt(p)) segments per second (C = sqrt(3/2) ~ 1.22 for
Reno-style halving, one segment acknowledged per ACK). The law describes long flows in
congestion avoidance; a round's short flows also pay slow start and retransmission timeouts,
which it leaves out, so it is an upper bound on what TCP can do at that loss and RTT.
"""
from __future__ import annotations

import math

MATHIS_C = math.sqrt(1.5)


def tcp_rate_pps(rtt_s: float, loss: float) -> float:
    """One flow's segments per second at round-trip time `rtt_s` and loss probability `loss`
    (0..1); infinite without loss (the law sets no limit then)."""
    if rtt_s <= 0 or not 0 <= loss < 1:
        raise ValueError(f"need rtt_s > 0 and loss in [0, 1), got {rtt_s}, {loss}")
    if loss == 0:
        return math.inf
    return MATHIS_C / (rtt_s * math.sqrt(loss))


def tcp_share(rtt_s: float, loss: float, flows: int, bottleneck_pps: float) -> float:
    """The fraction of the bottleneck `flows` such flows can fill together (at most 1)."""
    return min(1.0, flows * tcp_rate_pps(rtt_s, loss) / bottleneck_pps)


def rtt_for_bdp(bdp_packets: float, bottleneck_pps: float) -> float:
    """The round-trip time (s) at which `bdp_packets` packets are in flight at the bottleneck's rate."""
    if bdp_packets <= 0 or bottleneck_pps <= 0:
        raise ValueError("the bandwidth-delay product and the bottleneck rate must be positive")
    return bdp_packets / bottleneck_pps
