"""The sender's own port as a budget (hosts/transport/port_pacer.py): the PS's pull to N
workers goes out no faster than its port carries, the same for any N, and every peer gets its
turn. Sans-IO: the clock jumps to the times the sessions ask for."""
from __future__ import annotations

import argparse

import numpy as np
import pytest

from hosts import wire
from hosts.errors import ConfigError
from hosts.exchange.config import add_transport_arguments, config_from_args
from hosts.transport.chunking import ChunkPlan
from hosts.transport.port import Port
from hosts.transport.port_pacer import (FULL_DATAGRAM_BYTES, PORT_QUEUE_PACKETS,
                                        WIRE_OVERHEAD_BYTES, PortPacer)
from hosts.transport.sender import SendGroup, SendOptions, SendSession

JOB = 3
PLAN = ChunkPlan([20_000], 250)         # 80 chunks of 1000 bytes


def test_a_port_takes_a_queue_then_one_datagram_per_drained_half_queue():
    pacer = PortPacer(8e6, 0.004)       # 1 MB/s; 4 ms of queue
    assert pacer.ready_at(0.0) == 0.0
    sent = 0
    while pacer.ready_at(0.0) == 0.0:
        pacer.spend(1000 - WIRE_OVERHEAD_BYTES, 0.0)    # 1 ms on the wire each
        sent += 1
    assert sent == 4                                    # the queue is full at 4 ms
    assert pacer.backlog_s(0.0) == pytest.approx(0.004)
    assert pacer.ready_at(0.0) == pytest.approx(0.002)  # back once drained to half
    assert pacer.ready_at(0.002) == 0.002
    assert pacer.backlog_s(0.010) == 0.0
    assert pacer.ready_at(0.010) == 0.010


def test_the_default_queue_is_a_burst_of_full_datagrams_and_rate_zero_means_unknown():
    pacer = PortPacer.for_port(10_000)
    assert pacer is not None and pacer.rate_bps == 10e9
    assert pacer.depth_s == pytest.approx(
        PORT_QUEUE_PACKETS * (FULL_DATAGRAM_BYTES + WIRE_OVERHEAD_BYTES) * 8 / 10e9)
    assert PortPacer.for_port(0) is None
    for bad in (0.0, -1.0, float("inf"), float("nan")):
        with pytest.raises(ConfigError):
            PortPacer(bad, 0.001)


def test_every_session_on_one_port_spends_the_same_budget():
    port = Port(JOB, wire.PS_RANK, lambda: 0.0)
    options = SendOptions(port_mbps=100)
    a, b = (SendSession(port, ("10.0.0.2", 19527), r, PLAN, [np.zeros(20_000, np.float32)], 0,
                        pull=True, options=options) for r in (0, 1))
    assert a.pacer is not None and a.pacer is b.pacer is port.pacer(100)
    assert port.pacer(0) is None
    assert SendSession(Port(JOB, 1, lambda: 0.0), ("10.0.0.1", 1), wire.PS_RANK, PLAN,
                       [np.zeros(20_000, np.float32)], 0, pull=False,
                       options=SendOptions()).pacer is None


def _pull(peers: int, port_mbps: float, schedule: str = "together",
          window: int = 0) -> tuple[list[tuple[float, int, int]], PortPacer | None]:
    """The first pass of a pull to `peers` workers that never answer (no window by default:
    nothing but the port holds the senders back; with `window`, at most that many DATA each):
    (time, peer rank, wire bytes) of every DATA datagram."""
    now = 0.0
    port = Port(JOB, wire.PS_RANK, lambda: now)
    addrs = {r: (f"10.0.1.{r + 2}", 19527) for r in range(peers)}
    layers = [np.arange(20_000, dtype=np.float32)]
    group = SendGroup([SendSession(port, addr, r, PLAN, layers, 0, pull=True,
                                   options=SendOptions(port_mbps=port_mbps, probe_interval=1.0,
                                                       first_probe_delay=1.0, window=window))
                       for r, addr in addrs.items()], schedule=schedule)
    rank = {addr: r for r, addr in addrs.items()}
    out: list[tuple[float, int, int]] = []
    expected = peers * (min(window, PLAN.total_chunks) if window else PLAN.total_chunks)
    while len(out) < expected:
        wake = group.tick(now)
        for dg in port.take():
            if wire.unpack_header(dg.data).kind == wire.KIND_DATA:
                out.append((now, rank[dg.addr], len(dg.data) + WIRE_OVERHEAD_BYTES))
        assert wake < 1.0 or len(out) == expected, "the first pass stalled"
        now = max(now, wake)
    return out, port.pacer(port_mbps)


@pytest.mark.parametrize("peers", [1, 3, 8])
def test_a_pull_to_any_number_of_peers_never_queues_more_than_the_port_holds(peers):
    sent, pacer = _pull(peers, port_mbps=100)
    assert pacer is not None
    rate = pacer.rate_bps / 8                     # bytes/s
    largest = max(b for _, _, b in sent)
    total = 0
    for t, _, nbytes in sent:
        total += nbytes
        # what went out by t, less what the line drained, is the host's queue
        assert total - rate * t <= rate * pacer.depth_s + largest + 1e-6
    # and the port was kept busy: the pass took the wire time of its bytes, within a queue
    assert sent[-1][0] == pytest.approx(total / rate, abs=pacer.depth_s)


@pytest.mark.parametrize("peers", [3, 8])
def test_each_peer_gets_its_turn_of_the_shared_budget(peers):
    sent, _ = _pull(peers, port_mbps=100)
    counts = [0] * peers
    for _, rank, _ in sent:
        counts[rank] += 1
        assert max(counts) - min(counts) <= 1        # round robin across ticks, not peer 0 first


@pytest.mark.parametrize("port_mbps", [100, 0])
def test_a_serial_group_sends_one_peer_whole_before_the_next_and_keeps_the_port_busy(port_mbps):
    sent, _ = _pull(3, port_mbps=port_mbps, schedule="serial")
    ranks = [rank for _, rank, _ in sent]
    assert ranks == sorted(ranks) and set(ranks) == {0, 1, 2}
    if port_mbps:      # as busy as the interleaved pull: the same bytes in the same time
        together, _ = _pull(3, port_mbps=port_mbps)
        assert sent[-1][0] == pytest.approx(together[-1][0], rel=0.02)


def test_a_serial_group_gives_the_port_to_the_next_peer_once_a_window_is_full():
    sent, _ = _pull(3, port_mbps=100, schedule="serial", window=10)
    assert [rank for _, rank, _ in sent] == [0] * 10 + [1] * 10 + [2] * 10
    assert sent[10][0] == sent[9][0]      # rank 1 went on at once, in the same tick


def test_a_send_group_names_a_bad_schedule():
    session = SendSession(Port(JOB, wire.PS_RANK, lambda: 0.0), ("10.0.0.2", 1), 0, PLAN,
                          [np.zeros(20_000, np.float32)], 0, pull=True, options=SendOptions())
    with pytest.raises(ValueError, match="schedule 'fifo'"):
        SendGroup([session], schedule="fifo")


def test_without_a_port_rate_the_first_pass_goes_out_at_once():
    sent, pacer = _pull(8, port_mbps=0)
    assert pacer is None
    assert {t for t, _, _ in sent} == {0.0}


def _config(*flags: str):
    ap = argparse.ArgumentParser()
    add_transport_arguments(ap)
    return config_from_args(ap.parse_args(list(flags)), 1, seed=1)


def test_the_port_rate_flag_reaches_the_senders_and_bad_values_are_named():
    assert _config().send.port_mbps == 0.0
    config = _config("--port-mbps", "10000")
    assert config.send.port_mbps == 10_000.0 and config.summary()["port_mbps"] == 10_000.0
    for bad in ("-1", "inf", "nan"):
        with pytest.raises(ConfigError, match="--port-mbps"):
            _config("--port-mbps", bad)


def test_the_pull_schedule_flag_reaches_the_config_and_needs_a_udp_transport():
    assert _config().pull_schedule == "together"
    config = _config("--pull-schedule", "serial")
    assert config.pull_schedule == "serial" and config.summary()["pull_schedule"] == "serial"
    with pytest.raises(ConfigError, match="^--pull-schedule needs a UDP transport"):
        _config("--pull-schedule", "serial", "--transport", "tcp")


def test_the_loss_response_flag_reaches_the_window_and_needs_the_ecn_rule():
    assert _config().send.cc_loss == "always"
    config = _config("--cc-loss", "congested")
    assert config.send.cc_loss == "congested" and config.summary()["cc_loss"] == "congested"
    with pytest.raises(ConfigError, match="^--cc-loss congested needs --cc ecn"):
        _config("--cc-loss", "congested", "--cc", "reno")


def test_receive_sessions_take_the_jobs_probe_interval_ack_delay_and_scope():
    options = _config("--probe-ms", "0.25", "--ack-delay-ms", "0.1").receive_options(0.5, 10.0)
    assert (options.probe_interval, options.ack_delay, options.scope) == (0.00025, 0.0001, "tensor")
    assert options.deadline == 0.5 and options.absent_timeout == 10.0
    assert _config().receive_options(1.0, 1.0, scope="layer").scope == "layer"
