"""Background traffic in a simulated fabric: TCP flows between random host pairs, Poisson
arrivals at a load of the hosts' link rate, sizes from an empirical CDF (`sim/cpp/background.h :
TcpBackground`: every packet's work in C++), and each flow's start, end and size (`flows`).

The load is per sending host: with `n` hosts each offering `load` x its link rate on average,
flows arrive at n x load x rate / (8 x mean size) per second, the mean taken from the CDF as
TcpBackground draws from it (linear between points). DCTCP's web-search distribution
(`WEB_SEARCH_CDF`, sizes of DCTCP's SIGCOMM '10 measurement as the field's simulations use it)
is the default.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sim import tcp
from sim.errors import SimError
from sim.network import SimNetwork

PORT = 6000
STREAM = 1000          # TcpBackground's numbered ns-3 streams: 1000 .. 1003 (link loss uses 0, 1, ...)
MSS = 1460
# (bytes, P(size <= bytes)): DCTCP's web-search flow sizes in 1460-byte packets, as simulations
# of the field tabulate them (mean about 1.6 MB; 60 % of flows under 200 kB, most bytes in
# flows of 1 MB and more)
WEB_SEARCH_CDF: tuple[tuple[float, float], ...] = tuple((p * MSS, c) for p, c in (
    (6, 0.0), (6, 0.15), (13, 0.2), (19, 0.3), (33, 0.4), (53, 0.53), (133, 0.6), (667, 0.7),
    (1333, 0.8), (3333, 0.9), (6667, 0.97), (20000, 1.0)))


@dataclass(frozen=True)
class BackgroundSettings:
    """Background traffic: `load` of each sending host's link rate, sizes from `size_cdf`,
    ns-3's TCP `cc` (ECN on for DCTCP), arrivals from `start_s` until `stop_s`."""

    load: float
    size_cdf: tuple[tuple[float, float], ...] = WEB_SEARCH_CDF
    cc: str = "dctcp"
    start_s: float = 0.0
    stop_s: float = float("inf")

    def __post_init__(self) -> None:
        if not 0.0 < self.load <= 1.0:
            raise SimError(f"background load {self.load!r} is not in (0, 1]")
        if self.cc not in tcp.CONGESTION_CONTROLS:
            raise SimError(f"background cc '{self.cc}' is not one of {', '.join(sorted(tcp.CONGESTION_CONTROLS))}")
        if not self.start_s >= 0 or not self.stop_s > self.start_s:
            raise SimError(f"background start {self.start_s!r} / stop {self.stop_s!r}: need 0 <= start < stop")
        check_cdf(self.size_cdf)


def check_cdf(points: Any) -> tuple[tuple[float, float], ...]:
    """`points` as (bytes, cdf) pairs, sizes and probabilities non-decreasing, the last at 1;
    SimError naming what is wrong."""
    try:
        out = tuple((float(b), float(c)) for b, c in points)
    except (TypeError, ValueError):
        raise SimError(f"size CDF {points!r} is not a list of [bytes, cdf] pairs") from None
    if len(out) < 2:
        raise SimError("a size CDF needs at least two points")
    for (b0, c0), (b1, c1) in zip(out, out[1:]):
        if b1 < b0 or c1 < c0:
            raise SimError(f"size CDF points ({b0:g}, {c0:g}) then ({b1:g}, {c1:g}) decrease")
    if out[0][0] < 1 or out[0][1] < 0 or abs(out[-1][1] - 1.0) > 1e-9:
        raise SimError("a size CDF starts at >= 1 byte and a cdf >= 0, and ends at cdf 1")
    return out


def mean_size(points: tuple[tuple[float, float], ...]) -> float:
    """Mean bytes of the CDF, linear between points (as TcpBackground draws)."""
    total = points[0][0] * points[0][1]
    for (b0, c0), (b1, c1) in zip(points, points[1:]):
        total += (c1 - c0) * (b0 + b1) / 2.0
    return total


def flows_per_s(settings: BackgroundSettings, hosts: int, rate_bps: float) -> float:
    """The Poisson arrival rate that makes `hosts` senders offer `load` x `rate_bps` each."""
    return hosts * settings.load * rate_bps / (8.0 * mean_size(settings.size_cdf))


def install(net: SimNetwork, hosts: list[str], settings: BackgroundSettings, rate_bps: float,
            measured_until_s: float | None = None) -> Any:
    """Background flows among `hosts` of `net` (a C++ TcpBackground, started); call before
    `net.run`. The hosts' TCP sockets are of `settings.cc` from now on. After
    `measured_until_s` the senders stop handing bytes to their sockets (a flow not done by then
    does not count; the simulation need not carry it on)."""
    if len(hosts) < 2:
        raise SimError("background traffic needs at least two hosts")
    rate = flows_per_s(settings, len(hosts), rate_bps)
    stop = settings.stop_s if settings.stop_s != float("inf") else 1e9
    app = net.cpp.TcpBackground(PORT, rate, settings.start_s, stop, STREAM)
    socket_type = tcp.CONGESTION_CONTROLS[settings.cc]
    for host in hosts:
        app.AddHost(net.node(host), net.address(host), socket_type)
    for size, cdf in settings.size_cdf:
        app.AddSizePoint(size, cdf)
    if measured_until_s is not None:
        app.StopSendingAt(measured_until_s)
    app.Start()
    return app


def flows(app: Any) -> list[dict[str, Any]]:
    """Every flow that arrived: start, end (None: not complete), bytes, fct_s, src, dst."""
    out = []
    for i in range(int(app.start.size())):
        end = float(app.end[i])
        start = float(app.start[i])
        out.append({"start": start, "end": end if end >= 0 else None, "bytes": int(app.size[i]),
                    "fct_s": end - start if end >= 0 else None, "src": int(app.src[i]), "dst": int(app.dst[i])})
    return out
