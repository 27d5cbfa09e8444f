"""One packet must not stall a job (issue 18 point 5): the parameter server binds each worker's
address at HELLO and ignores its rank from anywhere else, validates before any state changes,
and bounds the packets it keeps for future rounds. Real UDP sockets on loopback."""
from __future__ import annotations

import argparse
import socket
import threading
import time

import numpy as np
import pytest

from hosts import wire
from hosts.exchange.config import add_transport_arguments, config_from_args
from hosts.exchange.join import JoinClient
from hosts.exchange.udp_server import UdpServerExchange
from hosts.exchange.udp_worker import UdpWorkerExchange
from hosts.transport import mux as mux_module
from hosts.transport.chunking import ChunkPlan
from hosts.transport.endpoint import Endpoint, Received
from hosts.transport.mux import Mux
from hosts.transport.receiver import ReceiveOptions, RecvSession
from support.joining import answer, hello, join_from

JOB = 7
LAYERS = [96, 40]
CHUNK = 8
ROUNDS = 4


def _config():
    ap = argparse.ArgumentParser()
    add_transport_arguments(ap)
    # --packet-mac off: these are the join's and the address binding's own defences, beneath
    # the packet MAC (which drops such forged packets first: tests/security/test_packet_mac.py)
    args = ap.parse_args(["--job", str(JOB), "--packet-mac", "off", "--bound", "0", "--pull-bound", "0",
                          "--chunk-elems", str(CHUNK), "--deadline-ms", "20000",
                          "--peer-timeout", "20", "--join-timeout", "20"])
    return config_from_args(args, len(LAYERS), seed=0)


def _grads(round_: int) -> list[np.ndarray]:
    return [np.arange(n, dtype=np.float32) + 1000 * round_ + 100 * i for i, n in enumerate(LAYERS)]


def _spoofed(plan: ChunkPlan, round_: int, kind: int = wire.KIND_DATA) -> list[bytes]:
    """Well-formed packets of worker rank 0 of our job, carrying 666.0 everywhere."""
    out = []
    for layer in range(plan.num_layers):
        for seq in range(plan.chunk_counts[layer]):
            payload = np.full(plan.length(layer, seq), 666.0, ">f4").tobytes() \
                if kind == wire.KIND_DATA else b""
            out.append(wire.pack_header(kind, 0, JOB, 0, layer, round_, 0, len(payload), seq,
                                        plan.offset(layer, seq)) + payload)
    return out


class _Job:
    """A PS and one worker in threads; a spoofer sends from its own socket meanwhile."""

    def __init__(self) -> None:
        self.config = _config()
        self.plan = ChunkPlan(LAYERS, CHUNK)
        self.ps = UdpServerExchange(self.config, self.plan, 1, ("127.0.0.1", 0))
        self.gathered: list[list[np.ndarray]] = []
        self.pulled: list[list[np.ndarray]] = []
        self.errors: list[BaseException] = []
        self.spoof = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.spoof.bind(("127.0.0.1", 0))
        self.spoof.settimeout(0.0)
        self.worker_address: tuple[str, int] | None = None

    def run_ps(self) -> None:
        try:
            required = self.config.bounds.required_fraction(pull=False)
            for r in range(ROUNDS):
                g = self.ps.gather(r, required)
                self.gathered.append([v.copy() for v in g.values[0]])
                self.ps.scatter(r, [v * 2 for v in g.values[0]], r == ROUNDS - 1,
                                required if r < ROUNDS - 1 else None)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.errors.append(exc)

    def run_worker(self) -> None:
        worker = UdpWorkerExchange(self.config, self.plan, 0, self.ps.endpoint.address,
                                   ("127.0.0.1", 0))
        self.worker_address = worker.endpoint.address
        try:
            worker.join()
            for r in range(ROUNDS):
                worker.push(r, _grads(r))
                self.pulled.append([v.copy() for v in worker.pull(r).values])
            worker.linger()
        except BaseException as exc:  # noqa: BLE001
            self.errors.append(exc)
        finally:
            worker.close()

    def run(self, spoof_packets: list[bytes], stream: bool) -> None:
        threads = [threading.Thread(target=self.run_ps), threading.Thread(target=self.run_worker)]
        target = self.ps.endpoint.address
        for p in spoof_packets:          # before the worker even said HELLO
            self.spoof.sendto(p, target)
        for t in threads:
            t.start()
        while stream and any(t.is_alive() for t in threads):
            for p in spoof_packets:
                self.spoof.sendto(p, target)
            time.sleep(0.002)
        for t in threads:
            t.join(timeout=60)
        assert not any(t.is_alive() for t in threads), "the job stalled"

    def answers_to_spoofer(self) -> int:
        n = 0
        while True:
            try:
                self.spoof.recv(65535)
            except BlockingIOError:
                return n
            n += 1

    def close(self) -> None:
        self.spoof.close()
        self.ps.close()


@pytest.fixture
def job():
    j = _Job()
    yield j
    j.close()


def _assert_rounds_unchanged(job: _Job) -> None:
    assert not job.errors, job.errors
    assert len(job.gathered) == len(job.pulled) == ROUNDS
    for r in range(ROUNDS):
        for got, sent in zip(job.gathered[r], _grads(r)):
            np.testing.assert_array_equal(got, sent)
        for got, sent in zip(job.pulled[r], _grads(r)):
            np.testing.assert_array_equal(got, sent * 2)


def test_one_spoofed_data_packet_changes_nothing(job):
    job.run(_spoofed(job.plan, 0)[:1], stream=False)
    _assert_rounds_unchanged(job)
    assert job.ps.counters["drop_wrong_source"] == 1
    assert job.answers_to_spoofer() == 0


def test_a_stream_of_spoofed_packets_leaves_every_round_unchanged(job):
    packets = [p for r in range(ROUNDS + 1) for p in _spoofed(job.plan, r)]
    packets += [p for kind in (wire.KIND_STOP, wire.KIND_ACK, wire.KIND_PROBE, wire.KIND_PULL_REQ,
                               wire.KIND_PCN_START)
                for p in _spoofed(job.plan, 1, kind)[:2]]
    job.run(packets, stream=True)
    _assert_rounds_unchanged(job)
    assert job.ps.counters["drop_wrong_source"] >= len(packets)
    assert job.answers_to_spoofer() == 0        # no ACK, STOP, BITMAP or pull data went there


def test_spoofed_pull_packets_sent_to_a_worker_change_nothing(job):
    """The worker's side: STOP, ACK and pull DATA 'from the PS' but from another address."""
    packets = [wire.pack_header(kind, wire.FLAG_PULL if kind == wire.KIND_DATA else 0, JOB,
                                wire.PS_RANK, layer, r, 0, len(body), 0, 0) + body
               for r in range(ROUNDS) for layer in range(len(LAYERS))
               for kind, body in ((wire.KIND_DATA, np.full(CHUNK, 666.0, ">f4").tobytes()),
                                  (wire.KIND_STOP, b""), (wire.KIND_ACK, b""))]
    threads = [threading.Thread(target=job.run_ps), threading.Thread(target=job.run_worker)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 60
    while any(t.is_alive() for t in threads) and time.monotonic() < deadline:
        if job.worker_address is not None:
            for p in packets:
                job.spoof.sendto(p, job.worker_address)
        time.sleep(0.002)
    for t in threads:
        t.join(timeout=5)
    assert not any(t.is_alive() for t in threads), "the job stalled"
    _assert_rounds_unchanged(job)
    assert job.answers_to_spoofer() == 0


def test_only_a_fresh_proof_moves_a_bound_rank_and_the_old_address_is_refused_then(job):
    """A HELLO from another address moves a bound rank only with a fresh proof of the key (a
    restarted worker); unproven it gets a challenge and nothing else, and once moved the
    rank's old address is not heard any more."""
    real = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    real.bind(("127.0.0.1", 0))
    try:
        assert join_from(real, job.ps, job.config.job_key, JOB, 0, job.ps.fingerprint).joined
        forged = JoinClient(b"not the job's key".ljust(32, b"!"), JOB, 0, job.ps.fingerprint)
        job.spoof.sendto(hello(JOB, 0, forged.next_hello()), job.ps.endpoint.address)
        forged._np = answer(job.spoof, job.ps)[1:17]     # the attacker skips checking the MAC
        job.spoof.sendto(hello(JOB, 0, forged.next_hello()), job.ps.endpoint.address)
        job.ps.mux.drain()
        assert job.ps.addrs == {0: real.getsockname()} and job.answers_to_spoofer() == 0
        assert job.ps.counters["drop_hello_bad_mac"] == 1
        assert join_from(job.spoof, job.ps, job.config.job_key, JOB, 0, job.ps.fingerprint).joined
        assert job.ps.addrs == {0: job.spoof.getsockname()}
        assert job.ps.counters["hello_rebind"] == 1
        assert [e["change"] for e in job.ps.member_events] == ["rebound", "rejoined"]
        for packet in _spoofed(job.plan, 1)[:3]:
            real.sendto(packet, job.ps.endpoint.address)
        job.ps.mux.drain()
        assert job.ps.counters["drop_wrong_source"] == 3
    finally:
        real.close()


def test_a_malformed_data_packet_does_not_move_the_senders_address():
    ep = Endpoint(("127.0.0.1", 0), JOB, wire.PS_RANK)
    plan = ChunkPlan(LAYERS, CHUNK)
    session = RecvSession(ep, plan, 0, pull=False, senders=[0], required=(1.0, 1.0),
                          options=ReceiveOptions(deadline=60.0))
    try:
        good = Received(wire.unpack_header(_spoofed(plan, 0)[0]), _spoofed(plan, 0)[0][32:],
                        ("127.0.0.1", 4000))
        session.on_packet(good, 1.0)
        bad_data = wire.pack_header(wire.KIND_DATA, 0, JOB, 0, 9, 0, 0, 4) + b"\0" * 4  # layer 9
        for raw in (bad_data, wire.pack_header(wire.KIND_PROBE, 0, JOB, 0, 0, 0, 0, 4) + b"abcd"):
            session.on_packet(Received(wire.unpack_header(raw), raw[32:], ("127.0.0.1", 5000)), 2.0)
        state = session.senders[0]
        assert state.addr == ("127.0.0.1", 4000) and state.last_heard == 1.0
        assert ep.counters["drop_corrupt"] == 2
    finally:
        ep.close()


def test_future_round_buffer_is_bounded_in_bytes():
    ep = Endpoint(("127.0.0.1", 0), JOB, wire.PS_RANK)
    try:
        mux = Mux(ep)
        mux.add(RecvSession(ep, ChunkPlan(LAYERS, CHUNK), 0, pull=False, senders=[0],
                            required=(1.0, 1.0), options=ReceiveOptions(deadline=60.0)))
        payload = b"\0" * 60000
        hdr = wire.unpack_header(wire.pack_header(wire.KIND_DATA, 0, JOB, 0, 0, 1, 0,
                                                  len(payload)) + payload)
        for _ in range(mux_module.FUTURE_PACKETS):
            mux.dispatch(Received(hdr, payload, ("127.0.0.1", 4000)), 0.0)
        kept = ep.counters["early_round_buffered"]
        assert kept * (len(payload) + wire.HEADER_LEN) <= mux_module.FUTURE_BYTES
        assert kept + ep.counters["drop_early_round_full"] == mux_module.FUTURE_PACKETS
        assert ep.counters["drop_early_round_full"] > 0
    finally:
        ep.close()
