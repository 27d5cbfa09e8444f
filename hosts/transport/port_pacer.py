"""What a host's own port carries: one pacing budget shared by every sender on that port.

A sender that opens windows to several peers at once (the PS's pull to every worker) puts the
sum of their windows into one link, its own. Each window grows by the ACKs of its own peer,
and nothing marks the host's own queue (its qdisc and NIC ring are not a switch: no ECN, no
telemetry), so N windows each sized as if alone overrun that queue and the host drops its own
DATA before any switch sees it. `PortPacer` models the port as a virtual queue drained at the
line rate: a datagram may go out while less than `depth_s` seconds of earlier ones wait in it,
so the host's queue never holds much more than that, whatever the number of peers. A sender
that found it full comes back once it has drained to half (`ready_at`), so a driver wakes once
per half a queue of datagrams, not once per datagram.

Pure logic on the caller's clock (no sockets): the UDP driver and the ns-3 driver give it the
same times. A wire byte count is the datagram plus its IPv4 and UDP headers and the link's
framing (`WIRE_OVERHEAD_BYTES`, Ethernet's, the largest of the links the drivers model; on a
point-to-point link that pacing is about 3 % below the line rate).
"""
from __future__ import annotations

from hosts.errors import ConfigError

# IPv4 (20) + UDP (8) headers, and Ethernet framing: header 14, FCS 4, preamble 8, gap 12.
WIRE_OVERHEAD_BYTES = 28 + 38
# How much the host's own queue may hold, in full-size datagrams: as many as a sender puts out
# in one burst (SendOptions.burst), so a driver wakes once per burst, not once per datagram.
PORT_QUEUE_PACKETS = 32
FULL_DATAGRAM_BYTES = 1500
# A wake-up computed from the budget may land a rounding error early (ns-3 rounds timers to
# whole nanoseconds): a datagram due within this much counts as due.
SLACK_S = 1e-9


class PortPacer:
    """A virtual queue in front of a port of `rate_bps` bits/s that may hold `depth_s` s."""

    def __init__(self, rate_bps: float, depth_s: float) -> None:
        if not rate_bps > 0 or rate_bps == float("inf"):
            raise ConfigError(f"port rate {rate_bps!r} bit/s is not a rate > 0")
        if not depth_s >= 0:
            raise ConfigError(f"port queue {depth_s!r} s is not a time >= 0")
        self.rate_bps = float(rate_bps)
        self.depth_s = float(depth_s)
        # when the virtual queue is empty again (the native send loop reads and moves it too)
        self.free_at = -float("inf")

    @classmethod
    def for_port(cls, port_mbps: float,
                 queue_packets: int = PORT_QUEUE_PACKETS) -> "PortPacer | None":
        """The pacer of a port of `port_mbps` Mb/s (None when 0: the rate is not known) whose
        own queue may hold `queue_packets` full-size datagrams."""
        if port_mbps <= 0:
            return None
        rate = port_mbps * 1e6
        return cls(rate, queue_packets * (FULL_DATAGRAM_BYTES + WIRE_OVERHEAD_BYTES) * 8 / rate)

    def ready_at(self, now: float) -> float:
        """When the next datagram may go out: `now` if the queue holds less than `depth_s`,
        else the moment it has drained to half of that."""
        if self.free_at - now < self.depth_s - SLACK_S:
            return now
        return self.free_at - self.depth_s / 2.0

    def spend(self, datagram_bytes: int, now: float) -> None:
        """A datagram of `datagram_bytes` (UDP payload) went out at `now`."""
        wire = (datagram_bytes + WIRE_OVERHEAD_BYTES) * 8 / self.rate_bps
        self.free_at = max(self.free_at, now) + wire

    def backlog_s(self, now: float) -> float:
        """Seconds of datagrams still waiting in the port's queue at `now` (the model's)."""
        return max(self.free_at - now, 0.0)
