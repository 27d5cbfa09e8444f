"""The transports' packets on a real loopback socket: MLT's and LTP's TOS bytes as received, and
the TCP exchange's congestion control and pacing on real connections (split from
tests/unit/hosts/test_mechanisms.py: these open sockets)."""
import argparse
import socket
import threading

import numpy as np
import pytest

from hosts import wire
from hosts.exchange import tcp_options
from hosts.exchange.config import add_transport_arguments, config_from_args
from hosts.exchange.tcp import TcpServerExchange, TcpWorkerExchange
from hosts.transport.chunking import ChunkPlan
from hosts.transport.endpoint import Endpoint
from hosts.transport.sender import SendSession

JOB = 4


def _config(*argv, layers=2):
    ap = argparse.ArgumentParser()
    add_transport_arguments(ap)
    return config_from_args(ap.parse_args(list(argv)), layers, seed=1)


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
