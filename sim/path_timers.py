"""The loss-tolerant arms' absolute timers derived from a regime-map cell's path, by one rule
for every cell (an arm opts in with `params.timers_from_path: true`).

The agents' defaults (probe 20 ms, push deadline 500 ms within [200 ms, 2 s], a 20 ms
queueing-delay target) fit the emulation, whose round trips are milliseconds and whose rounds
take a second; at 10 Gb/s and microsecond round trips a repair would wait thousands of RTTs.
With RTT the cell's configured round trip, Q the bottleneck queue's full drain time
(queue_depth / bottleneck_pps) and W the push's wire time (every worker's DATA packets through
the bottleneck, at bottleneck_pps):

- probe interval = 3 x (RTT + Q): the tuned-RTO TCP arm's 3 RTTs, over the worst path delay;
- push deadline: start 4 x W, floor W + 10 probe intervals (the agents' default floor is ten
  probe intervals), ceiling 4 x the start (as 2 s to 500 ms); MLT's fixed deadline is the start;
- the receiver's ACK delay (how long it holds an ACK of fewer than 16 chunks) = RTT + Q, one
  probe interval / 3: a sender's window of 10 packets never fills 16 chunks, so it is ACK-clocked
  by this timer;
- congestion control's queueing-delay target = Q / 2.

Not derived (a constant of the agents, not a flag): PROBE answers at 200 per second and sender
after a burst of 8 (docs/ns3.md, "Timers at datacenter scale").
"""
from __future__ import annotations

PROBE_PATH_DELAYS = 3        # probe interval / (RTT + full-queue drain)
DEADLINE_WIRE_TIMES = 4      # push deadline's start / the push's wire time
DEADLINE_FLOOR_PROBES = 10   # the floor's room for repairs, in probe intervals
CEILING_STARTS = 4           # the deadline's ceiling / its start


def timer_flags(rtt_s: float, bottleneck_pps: float, queue_depth: int, push_packets: int) -> list[str]:
    """Agent flags (--probe-ms, --ack-delay-ms, --deadline-ms, --deadline-floor-ms, --deadline-ceiling-ms,
    --cc-delay-ms) for a path of round trip `rtt_s`, a bottleneck of `bottleneck_pps` with
    `queue_depth` packets and a push of `push_packets` DATA packets in all workers."""
    drain = queue_depth / bottleneck_pps
    wire = push_packets / bottleneck_pps
    probe = PROBE_PATH_DELAYS * (rtt_s + drain)
    start = DEADLINE_WIRE_TIMES * wire
    floor = min(wire + DEADLINE_FLOOR_PROBES * probe, start)

    def ms(seconds: float) -> str:
        return f"{seconds * 1000:.4g}"

    return ["--probe-ms", ms(probe), "--ack-delay-ms", ms(rtt_s + drain), "--deadline-ms", ms(start), "--deadline-floor-ms", ms(floor),
            "--deadline-ceiling-ms", ms(CEILING_STARTS * start), "--cc-delay-ms", ms(drain / 2)]
