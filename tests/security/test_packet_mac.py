"""--packet-mac (issue 25 point 1, the per-packet option): with it, a packet that carries a bound
peer's source address but not the job's MAC changes nothing; switches may still rewrite the
telemetry fields. Real UDP sockets on loopback; the spoofed source through a raw socket (root)."""
from __future__ import annotations

import argparse
import os
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pytest

from fuzz.spoofed import udp_datagram
from hosts import wire
from hosts.errors import ConfigError
from hosts.exchange.config import TransportConfig, add_transport_arguments, config_from_args
from hosts.exchange.udp_server import UdpServerExchange
from hosts.exchange.udp_worker import UdpWorkerExchange
from hosts.transport import packet_mac
from hosts.transport.chunking import ChunkPlan
from hosts.transport.endpoint import Endpoint

JOB = 9
LAYERS = [40, 24]
CHUNK = 8
ROUNDS = 3


def _config(*extra: str):
    ap = argparse.ArgumentParser()
    add_transport_arguments(ap)
    args = ap.parse_args(["--job", str(JOB), "--bound", "0", "--pull-bound", "0", "--chunk-elems",
                          str(CHUNK), "--deadline-ms", "20000", "--peer-timeout", "10",
                          "--join-timeout", "10", *extra])
    return config_from_args(args, len(LAYERS), seed=0)


def test_the_endpoint_drops_what_lacks_the_mac_and_keeps_rewritten_telemetry():
    key = packet_mac.packet_key(b"k" * 32)
    peer = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    peer.bind(("127.0.0.1", 0))
    ep = Endpoint(("127.0.0.1", 0), JOB, wire.PS_RANK, peer=peer.getsockname(), mac_key=key)
    try:
        data = wire.pack_header(wire.KIND_STOP, 0, JOB, 0, wire.ALL_LAYERS, 1)
        signed = packet_mac.sign(key, data)
        stamped = bytearray(signed)
        stamped[24:32] = wire.pack_header(0, 0, 0, 0, 0, 0, tele_max_qdepth=9, tele_hops=2,
                                          tele_qdelay_us=77)[24:32]
        tampered = bytearray(signed)
        tampered[8] ^= 1                                   # the round
        other_job = packet_mac.sign(packet_mac.packet_key(b"x" * 32), data)
        for d in (data, bytes(tampered), other_job, signed, bytes(stamped)):
            peer.sendto(d, ep.address)
        time.sleep(0.05)
        got = ep.receive(0.5)
        assert [p.header.tele_hops for p in got] == [0, 2]
        assert ep.counters["drop_bad_mac"] == 3
    finally:
        ep.close()
        peer.close()


def test_packet_mac_leaves_room_in_the_mtu_and_needs_udp():
    with pytest.raises(ConfigError, match="must fit a 1500-byte MTU"):
        _config("--packet-mac", "--chunk-elems", "360")
    with pytest.raises(ConfigError, match="needs a UDP transport"):
        _config("--packet-mac", "--transport", "tcp")


def _grads(r: int) -> list[np.ndarray]:
    return [np.arange(n, dtype=np.float32) + 100 * r + 10 * i for i, n in enumerate(LAYERS)]


@dataclass
class _Spoofed:
    """What one PS and one worker exchanged over ROUNDS rounds while spoofed datagrams flowed."""

    gathered: list = field(default_factory=list)   # the PS's aggregate, per round
    pulled: list = field(default_factory=list)     # what the worker pulled, per round
    closed: list = field(default_factory=list)     # how the PS's push closed, per round
    counters: tuple = ()                          # (PS's, worker's) counters at the end


def _exchange_under_spoofing(config: TransportConfig,
                             spoofs_for: Callable[[int, int], list[bytes]]) -> _Spoofed:
    """Run ROUNDS rounds between a PS and one worker on loopback while a raw socket sends
    `spoofs_for(ps_port, worker_port)` (IP datagrams with the peers' addresses) every 2 ms."""
    plan = ChunkPlan(LAYERS, CHUNK)
    ps = UdpServerExchange(config, plan, 1, ("127.0.0.1", 0))
    worker = UdpWorkerExchange(config, plan, 0, ps.endpoint.address, ("127.0.0.1", 0))
    spoofs = spoofs_for(ps.endpoint.address[1], worker.endpoint.address[1])
    out, errors = _Spoofed(), []

    def run_ps() -> None:
        try:
            for r in range(ROUNDS):
                g = ps.gather(r, (1.0, 1.0))
                out.gathered.append([v.copy() for v in g.values[0]])
                out.closed.append(set(g.closed_by.values()))
                ps.scatter(r, g.values[0], r == ROUNDS - 1, None if r == ROUNDS - 1 else (1.0, 1.0))
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)

    done, first_batch = threading.Event(), threading.Event()

    def spoof() -> None:
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW) as raw:
                while not done.is_set():
                    for d in spoofs:
                        raw.sendto(d, ("127.0.0.1", 0))
                    first_batch.set()
                    time.sleep(0.002)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)
            first_batch.set()

    threads = [threading.Thread(target=run_ps), threading.Thread(target=spoof)]
    for t in threads:
        t.start()
    # One batch waits in both sockets before the worker starts: a short exchange on a busy
    # machine could otherwise end before the spoofing thread sent anything.
    first_batch.wait(10)
    try:
        worker.join()
        for r in range(ROUNDS):
            worker.push(r, _grads(r))
            out.pulled.append(worker.pull(r).values)
    finally:
        done.set()
        for t in threads:
            t.join(timeout=30)
        worker.close()
        ps.close()
    assert not errors, errors
    out.counters = (ps.counters, worker.counters)
    return out


def _assert_exact(run: _Spoofed) -> None:
    for r in range(ROUNDS):
        for got, back, sent in zip(run.gathered[r], run.pulled[r], _grads(r)):
            np.testing.assert_array_equal(got, sent)
            np.testing.assert_array_equal(back, sent)
    ps_counters, worker_counters = run.counters
    assert ps_counters["drop_bad_mac"] > 0 and worker_counters["drop_bad_mac"] > 0


@pytest.mark.skipif(os.geteuid() != 0, reason="spoofing a source address needs a raw socket")
def test_spoofed_packets_from_bound_addresses_change_nothing():
    def spoofs(ps_port: int, worker_port: int) -> list[bytes]:
        out = []
        for r in range(ROUNDS):
            out.append(udp_datagram(ps_port, worker_port,        # "the PS": STOP the push
                                    wire.pack_header(wire.KIND_STOP, 0, JOB, wire.PS_RANK,
                                                     wire.ALL_LAYERS, r)))
            body = np.full(CHUNK, 666.0, ">f4").tobytes()        # "the worker": poisoned DATA
            out.append(udp_datagram(worker_port, ps_port,
                                    wire.pack_header(wire.KIND_DATA, 0, JOB, 0, 0, r, 0,
                                                     len(body), 0, 0) + body))
        return out

    _assert_exact(_exchange_under_spoofing(_config("--packet-mac"), spoofs))


def _control(kind: int, flags: int, rank: int, round_: int, payload: bytes = b"") -> bytes:
    return wire.pack_header(kind, flags, JOB, rank, wire.ALL_LAYERS, round_,
                            payload_len=len(payload)) + payload


@pytest.mark.skipif(os.geteuid() != 0, reason="spoofing a source address needs a raw socket")
def test_with_default_flags_spoofed_control_packets_change_nothing():
    # No --packet-mac: the default signs every control kind. Before it was the default, one
    # spoofed STOP|PULL in a worker's name stalled a round for the 10 s peer timeout, and a
    # PULL_REQ made the PS resend a whole pull to the worker's address.
    config = _config()
    assert config.mac_mode == "control" and config.mac_key is not None
    bits = b"\xff" * 8

    def spoofs(ps_port: int, worker_port: int) -> list[bytes]:
        out = []
        for r in range(ROUNDS):
            as_ps = [_control(wire.KIND_STOP, 0, wire.PS_RANK, r),
                     _control(wire.KIND_STOP, wire.FLAG_PULL, wire.PS_RANK, r),
                     _control(wire.KIND_BITMAP, 0, wire.PS_RANK, r, bits),
                     _control(wire.KIND_ACK, 0, wire.PS_RANK, r),
                     _control(wire.KIND_PROBE, wire.FLAG_PULL, wire.PS_RANK, r),
                     _control(wire.KIND_EPOCH, 0, wire.PS_RANK, r + 1)]
            as_worker = [_control(wire.KIND_STOP, wire.FLAG_PULL, 0, r),
                         _control(wire.KIND_PULL_REQ, wire.FLAG_PULL, 0, r),
                         _control(wire.KIND_PROBE, 0, 0, r),
                         _control(wire.KIND_BITMAP, wire.FLAG_PULL, 0, r, bits),
                         _control(wire.KIND_ACK, wire.FLAG_PULL, 0, r)]
            out += [udp_datagram(ps_port, worker_port, d) for d in as_ps]
            out += [udp_datagram(worker_port, ps_port, d) for d in as_worker]
        return out

    run = _exchange_under_spoofing(config, spoofs)
    assert all(closed == {"complete"} for closed in run.closed), run.closed   # no deadline, no absence
    _assert_exact(run)


def _one_spoofed_data_packet(config: TransportConfig) -> tuple[list, object]:
    """One PS and one worker run ROUNDS rounds; between round 0's pull and round 1's push a raw
    socket sends ONE DATA packet in the worker's name (its address and rank, no MAC) for round
    1's first chunk, 666.0 everywhere: the round the PS gathers next, a chunk it still lacks.
    Returns the PS's aggregate per round and its counters."""
    plan = ChunkPlan(LAYERS, CHUNK)
    ps = UdpServerExchange(config, plan, 1, ("127.0.0.1", 0))
    worker = UdpWorkerExchange(config, plan, 0, ps.endpoint.address, ("127.0.0.1", 0))
    gathered: list = []
    errors: list = []

    def run_ps() -> None:
        try:
            for r in range(ROUNDS):
                g = ps.gather(r, (1.0, 1.0))
                gathered.append([v.copy() for v in g.values[0]])
                ps.scatter(r, g.values[0], r == ROUNDS - 1, None if r == ROUNDS - 1 else (1.0, 1.0))
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)

    body = np.full(CHUNK, 666.0, ">f4").tobytes()
    spoof = udp_datagram(worker.endpoint.address[1], ps.endpoint.address[1],
                         wire.pack_header(wire.KIND_DATA, 0, JOB, 0, 0, 1, 0, len(body), 0, 0) + body)
    thread = threading.Thread(target=run_ps)
    thread.start()
    try:
        worker.join()
        for r in range(ROUNDS):
            if r == 1:
                with socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW) as raw:
                    raw.sendto(spoof, ("127.0.0.1", 0))
                time.sleep(0.2)          # the PS reads it before the worker's own chunk
            worker.push(r, _grads(r))
            worker.pull(r)
    finally:
        thread.join(timeout=30)
        worker.close()
        ps.close()
    assert not errors, errors
    return gathered, ps.counters


@pytest.mark.skipif(os.geteuid() != 0, reason="spoofing a source address needs a raw socket")
@pytest.mark.parametrize("flags", [(), ("--packet-mac", "all")], ids=["default", "all"])
def test_one_spoofed_data_packet_in_the_window(flags):
    # The DATA finding: a spoofed DATA packet from the worker's address for a chunk the PS still
    # lacks, in the round it gathers next. With --packet-mac all it is dropped (no MAC) and the
    # aggregate is exact. The default is `control` (docs/security.md gives the measured cost of
    # `all`), which leaves this open: the spoofed values enter round 1's aggregate. Should the
    # default become `all`, this test asserts the aggregate unchanged under the defaults too.
    config = _config(*flags)
    gathered, counters = _one_spoofed_data_packet(config)
    spoofed_enters = config.mac_mode != "all"
    assert config.mac_mode == (flags[1] if flags else packet_mac.DEFAULT_MODE)
    for r in range(ROUNDS):
        want = [g.copy() for g in _grads(r)]
        if r == 1 and spoofed_enters:
            want[0][:CHUNK] = 666.0
        for got, w in zip(gathered[r], want):
            np.testing.assert_array_equal(got, w)
    assert counters["drop_bad_mac"] == (0 if spoofed_enters else 1)
