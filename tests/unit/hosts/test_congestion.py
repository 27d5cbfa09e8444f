"""The sender's window (issue 22): DCTCP-like on CE marks, echoed queue depth (Not-ECT DATA) and
queueing delay, loss only beyond the bound; Reno's halving on every loss as the ablation."""
import pytest

from hosts.errors import ConfigError
from hosts.transport.congestion import INITIAL_RTO, MIN_WINDOW, RttEstimate, Window


def _ack_window(w, marked_every=0, qdelay_us=0, qdepth=0, not_ect=0):
    """Acknowledge one window of packets, one per ACK; every `marked_every`-th CE-marked;
    with `not_ect`, every packet was sent Not-ECT."""
    for i in range(int(w.cwnd)):
        w.on_ack(1, int(marked_every > 0 and i % marked_every == 0), qdelay_us, qdepth, not_ect)


def test_ecn_window_grows_without_marks_and_shrinks_by_the_marked_fraction():
    w = Window(10, "ecn")
    _ack_window(w)
    assert w.cwnd >= 19 and w.stats.reductions == 0            # slow start
    assert w.alpha == pytest.approx(1 - 1 / 16)                # starts at 1, decays unmarked
    before = w.cwnd
    _ack_window(w, marked_every=1)                             # every packet marked
    assert w.stats.reductions == 1 and w.alpha == pytest.approx(1 - 15 / 256)
    assert w.cwnd == pytest.approx(before * 2 * (1 - w.alpha / 2))   # grew a window, then cut
    assert w.ssthresh == w.cwnd                                 # out of slow start


def test_ecn_alpha_follows_the_marked_fraction():
    w = Window(16, "ecn")
    w.ssthresh = 16                                            # congestion avoidance
    for _ in range(2000):
        w.on_ack(4, 1, 0)                                      # a quarter marked
    assert w.alpha == pytest.approx(0.25, abs=0.02)


def test_ecn_first_marked_window_halves():
    # alpha starts at 1 (Linux DCTCP's default): the first marks of a transfer halve the window
    # instead of trimming it by 1/32, which would let a burst of senders fill the queue.
    w = Window(10, "ecn")
    w.on_ack(10, 10, 0)
    assert w.stats.reductions == 1 and w.cwnd == pytest.approx(10)   # 20 halved


def test_ecn_counts_not_ect_packets_as_marked_above_the_mark_depth():
    w = Window(10, "ecn", mark_depth=40)
    w.on_ack(4, 0, 0, qdepth=40, not_ect=4)                    # at the threshold: not marked
    assert w.stats.marked == 0
    w.on_ack(4, 1, 0, qdepth=41, not_ect=2)                    # 1 CE + 2 Not-ECT above it
    assert w.stats.marked == 3
    w.on_ack(4, 0, 0, qdepth=63, not_ect=0)                    # ECT, no CE: the switch's say
    assert w.stats.marked == 3


def test_ecn_reacts_to_a_deep_queue_that_marks_no_packet():
    # Drop-eligible DATA is Not-ECT: without the echoed depth its window never shrank before
    # the queue overflowed.
    deep, shallow = Window(10, "ecn", mark_depth=40), Window(10, "ecn", mark_depth=40)
    for _ in range(60):
        deep.on_ack(1, 0, 0, qdepth=50, not_ect=1)
        shallow.on_ack(1, 0, 0, qdepth=30, not_ect=1)
    assert deep.stats.reductions >= 3 and shallow.stats.reductions == 0
    assert deep.cwnd < 12 < 60 < shallow.cwnd


def test_ecn_window_counts_a_long_queueing_delay_as_a_mark():
    w = Window(10, "ecn", delay_target_us=5000)
    _ack_window(w, qdelay_us=4000)
    assert w.stats.marked == 0
    _ack_window(w, qdelay_us=6000)
    assert w.stats.marked > 0 and w.stats.reductions == 1


def test_ecn_ignores_loss_within_the_bound_and_halves_beyond_it():
    w = Window(20, "ecn", loss_budget=7)
    w.on_loss(7, now=1.0)
    assert w.cwnd == 20 and w.stats.loss_halvings == 0
    w.on_loss(8, now=1.0)
    assert w.cwnd == 10 and w.stats.loss_halvings == 1
    w.on_loss(9, now=1.01)                                     # same loss event
    assert w.cwnd == 10


def test_ecn_with_loss_response_congested_cuts_only_after_signs_of_congestion():
    w = Window(20, "ecn", loss_budget=0, loss_gap=0.02, loss_response="congested")
    w.rtt.sample(0.005)                                        # srtt 5 ms: look back 20 ms
    w.on_ack(1, 0, 0, qdepth=10, now=1.0)                      # short queues: random loss
    w.on_loss(1, now=1.01)
    assert w.stats.loss_halvings == 0 and w.stats.losses_spared == 1
    w.on_ack(1, 0, 0, qdepth=41, now=1.02)                     # a switch queue above 40
    w.on_loss(1, now=1.03)
    assert w.stats.loss_halvings == 1 and w.cwnd < 21
    cut = w.cwnd
    w.on_ack(1, 1, 0, now=1.10)                                # a CE mark 30 ms before the loss:
    w.on_loss(1, now=1.13)                                     # older than the look-back
    assert w.stats.loss_halvings == 1 and w.stats.losses_spared == 2 and w.cwnd >= cut
    w.on_ack(1, 1, 0, now=1.20)
    w.on_loss(1, now=1.21)
    assert w.stats.loss_halvings == 2


def test_loss_response_congested_needs_the_ecn_rule():
    with pytest.raises(ConfigError, match="--cc-loss congested needs --cc ecn"):
        Window(10, "reno", loss_response="congested")
    with pytest.raises(ConfigError, match="--cc-loss 'sometimes'"):
        Window(10, "ecn", loss_response="sometimes")


def test_reno_halves_on_any_loss_and_ignores_marks():
    w = Window(20, "reno", loss_budget=7)
    _ack_window(w, marked_every=1, qdepth=63, not_ect=1)
    assert w.stats.reductions == 0 and w.stats.marked == 0
    grown = w.cwnd
    w.on_loss(1, now=5.0)
    assert w.cwnd == grown / 2
    for t in range(20):
        w.on_loss(1, now=6.0 + t)
    assert w.cwnd == MIN_WINDOW


def test_unknown_rule_is_a_config_error():
    with pytest.raises(ConfigError):
        Window(4, "vegas")


def _grown(rule="ecn", initial=10, acked=40):
    w = Window(initial, rule, idle_rto=0.02)
    w.on_send(0.0, 0)
    w.on_ack(acked, 0, 0)                                      # slow start, nothing marked
    return w


def test_window_decays_after_idle_as_kernel_tcp_after_an_rto():
    # A window grown in a round that met no congestion is not sent whole after idle: it halves
    # once per idle RTO down to the initial window; ssthresh keeps at least 3/4 of it.
    w = _grown()
    w.ssthresh = 20.0                                          # as if cut once before
    w.on_send(0.035, 0)                                        # 35 ms idle: one RTO passed
    assert w.cwnd == 25 and w.ssthresh == pytest.approx(37.5) and w.stats.idle_restarts == 1
    w.on_ack(10, 0, 0)                                         # slow start again, to ssthresh
    assert w.cwnd == 35
    w = _grown()
    w.on_send(1.0, 0)                                          # long idle: the initial window
    assert w.cwnd == 10 and w.ssthresh == float("inf")         # never cut: slow start, as Linux


def test_window_keeps_its_size_while_busy_or_briefly_idle():
    w = _grown()
    w.on_send(0.5, 3)                                          # packets still in flight
    assert w.cwnd == 50
    w.on_send(0.515, 0)                                        # 15 ms since the last send
    assert w.cwnd == 50 and w.stats.idle_restarts == 0


def test_idle_restart_never_grows_a_small_window_nor_lowers_ssthresh():
    w = Window(10, "reno", idle_rto=0.02)
    w.on_send(0.0, 0)
    w.on_loss(5, now=0.0)
    w.on_loss(5, now=1.0)                                      # 10 -> 5 -> 2.5, ssthresh 2.5
    w.ssthresh = 8.0
    w.on_send(5.0, 0)
    assert w.cwnd == 2.5 and w.ssthresh == 8.0 and w.stats.idle_restarts == 0


def test_first_send_is_not_an_idle_restart():
    w = Window(10, "ecn", idle_rto=0.02)
    w.on_send(100.0, 0)
    assert w.cwnd == 10 and w.stats.idle_restarts == 0


def test_rtt_estimate_follows_rfc_6298():
    rtt = RttEstimate()
    assert rtt.timeout(0.02) == INITIAL_RTO              # no sample: TCP's initial RTO
    assert rtt.surely_arrived_by(1.0) == 1.0 + INITIAL_RTO
    rtt.sample(0.1)
    assert (rtt.srtt, rtt.rttvar) == pytest.approx((0.1, 0.05))
    assert rtt.timeout(0.02) == pytest.approx(0.3)       # srtt + 4 rttvar
    rtt.sample(0.2)
    assert rtt.rttvar == pytest.approx(0.75 * 0.05 + 0.25 * 0.1)
    assert rtt.srtt == pytest.approx(0.1 + 0.1 / 8)
    assert rtt.surely_arrived_by(1.0) == pytest.approx(1.0 + rtt.srtt)


def test_rtt_timeout_never_drops_below_its_floor():
    rtt = RttEstimate()
    for _ in range(50):
        rtt.sample(0.001)
    assert rtt.timeout(0.02) == 0.02
