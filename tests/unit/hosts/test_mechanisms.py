"""The papers' mechanisms as named: the software-MLT baseline, the TCP baseline's congestion
control / ECN / pacing, adaptive early close, reliable pull, CRITICAL marking, bound violations.

Real UDP/TCP sockets on 127.0.0.1; packets are read back from the wire, TOS included."""
import argparse
import socket
import threading

import numpy as np
import pytest

from hosts import wire
from hosts.errors import ConfigError
from hosts.exchange import tcp_options
from hosts.exchange.config import add_transport_arguments, config_from_args
from hosts.exchange.tcp import TcpServerExchange, TcpWorkerExchange
from hosts.transport.chunking import ChunkPlan
from hosts.transport.deadline import Deadline, DeadlineSettings
from hosts.transport.endpoint import Endpoint
from hosts.transport.sender import SendSession

JOB = 4


def _config(*argv, layers=2):
    ap = argparse.ArgumentParser()
    add_transport_arguments(ap)
    return config_from_args(ap.parse_args(list(argv)), layers, seed=1)


def test_mlt_is_one_fixed_bound_for_push_and_pull_with_no_network_help():
    cfg = _config("--transport", "mlt", "--bound", "0.08", layers=3)
    assert cfg.bounds.push == cfg.bounds.pull == (0.08, 0.08, 0.08)   # no quarter-bound pull
    assert cfg.plain and not cfg.send.priority_hints
    assert cfg.push_deadline.mode == "fixed"
    ltp = _config("--bound", "0.08", layers=3)
    assert ltp.bounds.pull == pytest.approx((0.02,) * 3) and not ltp.plain
    assert ltp.push_deadline.mode == "telemetry"


@pytest.mark.parametrize("flags, needle", [
    (["--pull-bound", "0.01"], "--pull-bound"),
    (["--layer-bounds", "0.1,0.1"], "--layer-bounds"),
    (["--phase-aware"], "--phase-aware"),
    (["--reliable-pull"], "--reliable-pull"),
    (["--deadline", "adaptive"], "--deadline adaptive"),
    (["--deadline", "telemetry"], "--deadline telemetry"),
])
def test_mlt_refuses_what_the_baseline_does_not_have(flags, needle):
    with pytest.raises(ConfigError, match="one fixed bound for push and pull") as info:
        _config("--transport", "mlt", *flags)
    assert needle in str(info.value)


def test_mlt_help_says_exactly_what_it_is():
    ap = argparse.ArgumentParser()
    add_transport_arguments(ap)
    text = " ".join(ap.format_help().split())
    assert "software-MLT baseline of the DBLP paper" in text
    assert "ONE fixed --bound for push and pull alike, no per-layer bounds, no phases" in text
    assert "PLAIN flag" in text


def _recv_with_tos(sock):
    data, anc, _, _ = sock.recvmsg(65535, socket.CMSG_SPACE(4))
    tos = next(d[0] for level, kind, d in anc if level == socket.IPPROTO_IP and kind == socket.IP_TOS)
    return wire.unpack_header(data), tos


@pytest.mark.parametrize("transport,cc", [("mlt", "ecn"), ("mlt", "reno"), ("ltp", "ecn")])
def test_mlt_packets_carry_plain_and_dscp_0_on_the_wire(transport, cc):
    """mlt's packets carry PLAIN and DSCP 0; its DATA is ECN-capable (ECT(0)) under --cc ecn,
    so switches mark it CE as they would a DCTCP flow, and Not-ECT under --cc reno."""
    cfg = _config("--transport", transport, "--bound", "0.0" if transport == "mlt" else "0.1",
                  "--cc", cc)
    peer = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    peer.bind(("127.0.0.1", 0))
    peer.settimeout(2)
    peer.setsockopt(socket.IPPROTO_IP, socket.IP_RECVTOS, 1)
    ep = Endpoint(("127.0.0.1", 0), JOB, 0, plain=cfg.plain)
    try:
        plan = ChunkPlan([8, 8], 4)
        layers = [np.array([0.01] * 4 + [1.0] * 4, dtype=np.float32)] * 2
        s = SendSession(ep, peer.getsockname(), wire.PS_RANK, plan, layers, 0, pull=False,
                        options=cfg.send, critical_layers=cfg.bounds.critical_layers(pull=False))
        s.tick(0.0)
        ep.send_control(wire.KIND_PROBE, peer.getsockname(), 0)
        got = [_recv_with_tos(peer) for _ in range(5)]
        if transport == "mlt":
            data_tos = wire.ECN_ECT0 if cc == "ecn" else 0
            assert all(h.flags & wire.FLAG_PLAIN for h, _ in got)
            assert all(tos == (data_tos if h.kind == wire.KIND_DATA else 0) for h, tos in got)
            # bound 0: every layer is critical; the flag rides along (switches ignore it with PLAIN)
            assert all(h.flags & wire.FLAG_CRITICAL for h, _ in got if h.kind == wire.KIND_DATA)
        else:
            assert not any(h.flags & wire.FLAG_PLAIN for h, _ in got)
            assert {tos for _, tos in got} - {0}
    finally:
        ep.close()
        peer.close()


def test_ltp_without_priority_hints_sends_data_with_tos_0_and_keeps_critical():
    """The ablation arm "no priority": DATA leaves with TOS 0 (the DSCP-0 queue of ordinary
    traffic at a switch that does not prioritize the job); CRITICAL still marks bound-0 layers."""
    cfg = _config("--priority-hints", "off", "--layer-bounds", "0.1,0.0")
    assert not cfg.send.priority_hints and cfg.summary()["priority_hints"] is False
    assert _config().summary()["priority_hints"] is True
    peer = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    peer.bind(("127.0.0.1", 0))
    peer.settimeout(2)
    peer.setsockopt(socket.IPPROTO_IP, socket.IP_RECVTOS, 1)
    ep = Endpoint(("127.0.0.1", 0), JOB, 0, plain=cfg.plain)
    try:
        plan = ChunkPlan([8, 8], 4)
        layers = [np.array([0.01] * 4 + [1.0] * 4, dtype=np.float32)] * 2
        s = SendSession(ep, peer.getsockname(), wire.PS_RANK, plan, layers, 0, pull=False,
                        options=cfg.send, critical_layers=cfg.bounds.critical_layers(pull=False))
        s.tick(0.0)
        got = [_recv_with_tos(peer) for _ in range(4)]
        assert all(h.kind == wire.KIND_DATA and tos == 0 for h, tos in got)
        assert not any(h.flags & (wire.FLAG_PLAIN | wire.FLAG_DROPPABLE) for h, _ in got)
        assert {h.layer_id for h, _ in got if h.flags & wire.FLAG_CRITICAL} == {1}
    finally:
        ep.close()
        peer.close()


def test_tcp_cc_must_be_offered_by_the_kernel_and_needs_tcp():
    have = tcp_options.available_congestion_controls()
    assert have, "this kernel lists its congestion controls"
    with pytest.raises(ConfigError) as info:
        _config("--transport", "tcp", "--tcp-cc", "no-such-cc")
    assert f"offers {' '.join(have)}" in str(info.value)
    with pytest.raises(ConfigError, match="need --transport tcp"):
        _config("--tcp-cc", have[0])
    with pytest.raises(ConfigError, match="need --transport tcp"):
        _config("--transport", "mlt", "--tcp-ecn", "on")
    assert _config("--transport", "tcp", "--tcp-cc", have[0]).tcp_cc == have[0]


def test_tcp_ecn_is_checked_never_changed():
    current = open(tcp_options.TCP_ECN).read().strip()
    fits_on = current == "1"
    with pytest.raises(ConfigError, match="set it to .* there first"):
        tcp_options.check_ecn(not fits_on)
    assert open(tcp_options.TCP_ECN).read().strip() == current
    assert tcp_options.check_ecn(None) == f"net.ipv4.tcp_ecn={current}"


@pytest.mark.parametrize("cc", ["reno", "cubic"])
def test_tcp_exchange_uses_the_chosen_congestion_control_and_paces(cc):
    if cc not in tcp_options.available_congestion_controls():
        pytest.fail(f"{cc} is not offered by this kernel")
    cfg = _config("--transport", "tcp", "--tcp-cc", cc, "--pace-pps", "500", "--join-timeout", "5")
    plan = ChunkPlan([16, 8], 8)
    server = TcpServerExchange(cfg, plan, 1, ("127.0.0.1", 0))
    worker = None
    try:
        worker = TcpWorkerExchange(cfg, plan, 0, server.listener.getsockname(), ("127.0.0.1", 0))
        joined = threading.Thread(target=worker.join)
        joined.start()
        server._accept_all()
        joined.join(5)
        mine, theirs = worker.describe()["connection"], server.describe()["connections"][0]
        assert mine["cc"] == theirs["cc"] == cc
        assert mine["max_pacing_bytes_s"] and mine["max_pacing_bytes_s"] >= 500 * 52
        assert cfg.summary()["tcp_cc"] == cc and cfg.summary()["pace_pps"] == 500
    finally:
        if worker is not None:
            worker.close()
        server.close()


def test_adaptive_deadline_follows_the_smoothed_transfer_time():
    d = Deadline(DeadlineSettings("adaptive", initial=0.5, floor=0.02, ceiling=2.0, multiple=3.0))
    assert d.current() == 0.5                       # before any sample: the start value
    d.observe(0.1)
    assert d.current() == pytest.approx(0.3)        # 3 x S, S = first sample
    d.observe(0.9)
    assert d.current() == pytest.approx(3 * (0.1 + 0.8 / 8))   # EWMA gain 1/8
    for _ in range(60):
        d.observe(0.001)
    assert d.current() == 0.02                      # floor
    for _ in range(60):
        d.observe(5.0)
    assert d.current() == 2.0                       # ceiling
    fixed = Deadline(DeadlineSettings("fixed", initial=0.5))
    fixed.observe(0.01)
    assert fixed.current() == 0.5
    with pytest.raises(ConfigError, match="--deadline-floor-ms"):
        _config("--deadline-floor-ms", "500", "--deadline-ceiling-ms", "100")


def test_reliable_pull_has_no_bound_and_no_deadline():
    cfg = _config("--reliable-pull", "--bound", "0.1")
    assert cfg.bounds.pull == (0.0, 0.0) and cfg.bounds.push == (0.1, 0.1)
    assert cfg.pull_deadline.initial == float("inf") and cfg.push_deadline.initial == 0.5
    assert cfg.bounds.critical_layers(pull=True) == {0, 1}
    with pytest.raises(ConfigError, match="drop --pull-bound"):
        _config("--reliable-pull", "--pull-bound", "0.01")


def test_phase_flags():
    cfg = _config("--phase-aware", "--phase-check-rounds", "5", "--phase-per-layer")
    assert cfg.phase_check_rounds == 5 and cfg.phase_per_layer
    assert _config("--phase-aware").phase_check_rounds == 10
    with pytest.raises(ConfigError, match="--phase-check-rounds 0"):
        _config("--phase-aware", "--phase-check-rounds", "0")
    with pytest.raises(ConfigError, match="needs --phase-aware"):
        _config("--phase-per-layer")
