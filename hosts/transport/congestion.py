"""The congestion window of a loss-tolerant sender: pure logic, no sockets (docs/mechanisms.md,
"Congestion control of the UDP sender").

Rule ``ecn`` (default, DCTCP-like): a newly acknowledged ECN-capable packet counts as marked
when its DATA arrived CE-marked (the switch's own mark: egress queue deeper than its ECN
threshold); a Not-ECT one (drop-eligible DATA, which switches drop rather than mark) when the
ACK echoes a switch queue deeper than `mark_depth` (in-band telemetry, the same enqueue depth
the switch compares with its threshold), i.e. when the switch would have marked it had it been
ECN-capable. Every packet of an ACK echoing a path queueing delay above `delay_target` counts
as marked. Once per window of acknowledged packets, alpha <- (1 - g) alpha + g F
(F = marked / acknowledged, g = 1/16; alpha starts at 1, as Linux DCTCP's does, so the first
marked window halves), and if anything was marked, cwnd <- cwnd (1 - alpha / 2). Loss is a
congestion signal only beyond the bound: when more chunks are known lost than the receiver
may leave missing (`loss_budget`), the window halves as Reno's does. An observation window is
as many acknowledged packets as the window held when it began (about one round trip).
Rule ``reno``: every loss event halves the window (at most once per `loss_gap` s or smoothed
round trip, whichever is longer: losses found within a round trip are one event); CE and delay
are ignored. Loss is what the receiver's BITMAPs show (a chunk overtaken in the ACKs only stops
holding the window: its ACK may have been the one lost).
With `loss_response` 'congested' (rule ``ecn`` only), a loss beyond the bound cuts the window
only if an ACK showed congestion within the last max(`loss_gap`, 2 smoothed round trips): a CE
mark, a counted-as-marked packet, or a switch queue deeper than `mark_depth` in its telemetry.
Loss on a path whose switches' queues stayed short is taken as random loss, not congestion
(counted in `WindowStats.losses_spared`); 'always' (the default) cuts on every such loss.
Both: +1 per acknowledged packet below the slow-start threshold, +1/cwnd above it; never below
MIN_WINDOW packets.
After idle (`on_send`: nothing in flight and nothing sent for longer than `idle_rto`), the
window is no longer validated by ACKs: as kernel TCP does (RFC 2861; Linux's
tcp_slow_start_after_idle), it halves once per `idle_rto` idle, not below the initial window
(nor above the window it had), and the slow-start threshold keeps the memory: it becomes at
least 3/4 of the window before the cut. Without this, a window grown in a round that met no
congestion goes out whole at the start of the next round, when every worker pushes at once.
The window also keeps the peer's round-trip time (`rtt`, RttEstimate): the sender's loss timer
and the age a chunk needs before a BITMAP may call it lost derive from it.
"""
from __future__ import annotations

from dataclasses import dataclass

from hosts.errors import ConfigError

RULES = ("ecn", "reno")
LOSS_RESPONSES = ("always", "congested")
DCTCP_GAIN = 1.0 / 16.0
# The switches' ECN marking threshold by default (controller NetworkOptions.ecn_normal, packets).
SWITCH_ECN_THRESHOLD = 40
MIN_WINDOW = 2.0
# Loss timer before the first RTT sample (RFC 6298 2.1 and Linux's TCP_TIMEOUT_INIT: 1 s).
INITIAL_RTO = 1.0
INFINITY = float("inf")


def check_loss_response(rule: str, loss_response: str) -> None:
    """ConfigError unless `loss_response` is one of LOSS_RESPONSES and fits `rule`."""
    if loss_response not in LOSS_RESPONSES:
        raise ConfigError(f"--cc-loss {loss_response!r} is not one of {', '.join(LOSS_RESPONSES)}")
    if loss_response == "congested" and rule != "ecn":
        raise ConfigError("--cc-loss congested needs --cc ecn (reno sees no marks or telemetry)")


@dataclass
class RttEstimate:
    """Smoothed round-trip time and its variation from ACK samples, as TCP keeps them
    (RFC 6298): the first sample R sets srtt = R, rttvar = R/2; later ones
    rttvar <- 3/4 rttvar + 1/4 |srtt - R|, srtt <- 7/8 srtt + 1/8 R. The sender feeds only
    chunks sent once (Karn's rule: an ACK of a resent chunk does not say which send it answers)."""

    srtt: float = 0.0
    rttvar: float = 0.0
    samples: int = 0

    def sample(self, rtt: float) -> None:
        """One round-trip measurement in seconds."""
        if self.samples == 0:
            self.srtt, self.rttvar = rtt, rtt / 2.0
        else:
            self.rttvar += 0.25 * (abs(self.srtt - rtt) - self.rttvar)
            self.srtt += 0.125 * (rtt - self.srtt)
        self.samples += 1

    def timeout(self, floor: float) -> float:
        """TCP's retransmission timeout, srtt + 4 rttvar, not below `floor`; INITIAL_RTO before
        the first sample."""
        if self.samples == 0:
            return max(floor, INITIAL_RTO)
        return max(floor, self.srtt + 4.0 * self.rttvar)

    def surely_arrived_by(self, sent: float) -> float:
        """When DATA sent at `sent` has had its round trip: a chunk not yet arrived at a probe
        sent before this time is lost, not queued (INITIAL_RTO stands for srtt before a sample)."""
        return sent + (self.srtt if self.samples else INITIAL_RTO)


@dataclass
class WindowStats:
    marked: int = 0          # acknowledged packets that carried CE or met a queueing delay
    reductions: int = 0      # window cuts by marks (ecn)
    loss_halvings: int = 0   # window cuts by loss (reno, or ecn beyond the bound)
    idle_restarts: int = 0   # window decays after an idle period (on_send)
    losses_spared: int = 0   # losses beyond the bound with no congestion seen: no cut (congested)


class Window:
    """A congestion window in DATA packets."""

    def __init__(self, initial: float, rule: str = "ecn", loss_budget: int = 0,
                 delay_target_us: int = 20_000, loss_gap: float = 0.02,
                 mark_depth: int = SWITCH_ECN_THRESHOLD, idle_rto: float = 0.02,
                 loss_response: str = "always") -> None:
        if rule not in RULES:
            raise ConfigError(f"--cc {rule!r} is not one of {', '.join(RULES)}")
        check_loss_response(rule, loss_response)
        self.cwnd = float(initial)
        self.initial = float(initial)
        self.rule = rule
        self.loss_budget = loss_budget
        self.delay_target_us = delay_target_us
        self.loss_gap = loss_gap
        self.mark_depth = mark_depth
        self.idle_rto = idle_rto
        self._last_send = INFINITY    # no send yet: nothing to decay
        self.ssthresh = INFINITY
        self.alpha = 1.0
        self._acked = 0
        self._marked = 0
        self._observe = self.cwnd     # packets in this observation window (the window then)
        self._last_loss_cut = -INFINITY
        self.loss_response = loss_response
        self._congested_at = -INFINITY   # when an ACK last showed congestion
        self.stats = WindowStats()
        self.rtt = RttEstimate()

    def allows(self, outstanding: int) -> bool:
        """May one more packet go out with `outstanding` unacknowledged ones in flight?"""
        return outstanding < int(self.cwnd)

    def on_send(self, now: float, outstanding: int) -> None:
        """A DATA packet goes out at `now` with `outstanding` packets unacknowledged; after an
        idle period the window first decays (see the module docstring)."""
        idle = now - self._last_send
        self._last_send = now
        if outstanding > 0 or idle <= self.idle_rto:
            return
        self.ssthresh = max(self.ssthresh, 0.75 * self.cwnd)
        floor = min(self.initial, self.cwnd)
        cwnd = self.cwnd
        while idle > self.idle_rto and cwnd > floor:
            cwnd /= 2.0
            idle -= self.idle_rto
        if cwnd < self.cwnd:
            self.cwnd = max(cwnd, floor)
            self._observe = min(self._observe, self.cwnd)
            self.stats.idle_restarts += 1

    def on_ack(self, newly: int, ce_marked: int, qdelay_us: int, qdepth: int = 0,
               not_ect: int = 0, now: float | None = None) -> None:
        """One ACK at `now`: `newly` packets acknowledged for the first time, `ce_marked` of
        them CE, `not_ect` of them sent Not-ECT; `qdelay_us` and `qdepth` the path queueing
        delay and deepest queue the ACK echoes."""
        if newly <= 0:
            return
        if now is not None and (ce_marked or qdepth > self.mark_depth or qdelay_us > self.delay_target_us):
            self._congested_at = now
        for _ in range(newly):
            self.cwnd += 1.0 if self.cwnd < self.ssthresh else 1.0 / self.cwnd
        if self.rule != "ecn":
            return
        if qdelay_us > self.delay_target_us:
            marked = newly
        else:
            marked = min(ce_marked + (not_ect if qdepth > self.mark_depth else 0), newly)
        self.stats.marked += marked
        self._acked += newly
        self._marked += marked
        if self._acked >= self._observe:
            fraction = self._marked / self._acked
            self.alpha += DCTCP_GAIN * (fraction - self.alpha)
            if self._marked:
                self.cwnd = max(self.cwnd * (1.0 - self.alpha / 2.0), MIN_WINDOW)
                self.ssthresh = self.cwnd
                self.stats.reductions += 1
            self._acked = self._marked = 0
            self._observe = self.cwnd

    def on_loss(self, lost: int, now: float) -> None:
        """`lost` chunks are known missing at the receiver now (its BITMAPs)."""
        if lost <= 0 or (self.rule == "ecn" and lost <= self.loss_budget):
            return
        if now - self._last_loss_cut <= max(self.loss_gap, self.rtt.srtt):
            return      # one cut per loss event: losses within a round trip are the same one
        if (self.loss_response == "congested"
                and now - self._congested_at > max(self.loss_gap, 2.0 * self.rtt.srtt)):
            self.stats.losses_spared += 1
            return
        self.ssthresh = max(self.cwnd / 2.0, MIN_WINDOW)
        self.cwnd = self.ssthresh
        self._last_loss_cut = now
        self.stats.loss_halvings += 1
