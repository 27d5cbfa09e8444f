"""The sender's window (issue 22): DCTCP-like on CE marks and queueing delay, loss only beyond
the bound; Reno's halving on every loss as the ablation."""
import pytest

from hosts.errors import ConfigError
from hosts.transport.congestion import MIN_WINDOW, Window


def _ack_window(w, marked_every=0, qdelay_us=0):
    """Acknowledge one window of packets, one per ACK; every `marked_every`-th CE-marked."""
    for i in range(int(w.cwnd)):
        w.on_ack(1, int(marked_every > 0 and i % marked_every == 0), qdelay_us)


def test_ecn_window_grows_without_marks_and_shrinks_by_the_marked_fraction():
    w = Window(10, "ecn")
    _ack_window(w)
    assert w.cwnd >= 19 and w.stats.reductions == 0            # slow start
    before = w.cwnd
    _ack_window(w, marked_every=1)                             # every packet marked
    assert w.stats.reductions == 1 and w.alpha == pytest.approx(1 / 16)
    assert w.cwnd < before * 2 * (1 - w.alpha / 2) + 1
    assert w.ssthresh == w.cwnd                                 # out of slow start


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


def test_reno_halves_on_any_loss_and_ignores_marks():
    w = Window(20, "reno", loss_budget=7)
    _ack_window(w, marked_every=1)
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
