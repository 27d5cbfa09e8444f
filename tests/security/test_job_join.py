"""Only a job's own workers join it (issue 25 point 1): a sender that speaks first cannot take a
rank without the job's key, learns nothing about the job, and a recorded proof fails from
another address or against another PS. Real UDP and TCP sockets on loopback, real agents."""
from __future__ import annotations

import argparse
import os
import select
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from hosts import wire
from hosts.errors import PeerTimeout
from hosts.exchange.config import add_transport_arguments, config_from_args, fingerprint
from hosts.exchange.join import JoinClient
from hosts.exchange.tcp import TcpServerExchange, TcpWorkerExchange
from hosts.exchange.udp_server import UdpServerExchange
from hosts.exchange.udp_worker import UdpWorkerExchange
from hosts.transport.chunking import ChunkPlan
from support.joining import answer, hello, join_from

ROOT = Path(__file__).resolve().parents[2]
JOB = 5
LAYERS = [48, 20]
CHUNK = 8


def _config(*extra: str):
    ap = argparse.ArgumentParser()
    add_transport_arguments(ap)
    # --packet-mac off: these are the join's and the address binding's own defences, beneath
    # the packet MAC (which drops such forged packets first: tests/security/test_packet_mac.py)
    args = ap.parse_args(["--job", str(JOB), "--packet-mac", "off", "--bound", "0", "--pull-bound", "0",
                          "--chunk-elems", str(CHUNK), "--deadline-ms", "20000",
                          "--peer-timeout", "10", "--join-timeout", "3", *extra])
    return config_from_args(args, len(LAYERS), seed=0)


def _grads() -> list[np.ndarray]:
    return [np.arange(n, dtype=np.float32) + 10 * i for i, n in enumerate(LAYERS)]


def _old_style_hello(config, plan: ChunkPlan, rank: int = 0) -> bytes:
    """What took a rank before: a HELLO with the (guessable) configuration fingerprint."""
    fp = struct.pack("!I", fingerprint(plan.layer_sizes, plan.chunk_elems, config))
    return hello(JOB, rank, fp)


@pytest.fixture
def attacker():
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    yield sock
    sock.close()


def _received(sock: socket.socket) -> list[bytes]:
    sock.settimeout(0.0)
    out = []
    while True:
        try:
            out.append(sock.recv(65535))
        except (BlockingIOError, socket.timeout):
            return out


def _one_round(ps: UdpServerExchange, worker: UdpWorkerExchange) -> tuple[list, list]:
    """Join, push and pull one round; (what the PS gathered, errors)."""
    gathered: list = []
    errors: list[BaseException] = []

    def run_ps() -> None:
        try:
            g = ps.gather(0, ps.config.bounds.required_fraction(pull=False))
            gathered.append(g.values[0])
            ps.scatter(0, g.values[0], True, None)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)

    thread = threading.Thread(target=run_ps)
    thread.start()
    try:
        worker.join()
        worker.push(0, _grads())
        worker.pull(0)
    except BaseException as exc:  # noqa: BLE001
        errors.append(exc)
    thread.join(timeout=30)
    assert not thread.is_alive(), "the PS stalled"
    return gathered, errors


def test_a_sender_that_speaks_first_does_not_take_a_rank(attacker):
    config = _config()
    plan = ChunkPlan(LAYERS, CHUNK)
    ps = UdpServerExchange(config, plan, 1, ("127.0.0.1", 0))
    worker = UdpWorkerExchange(config, plan, 0, ps.endpoint.address, ("127.0.0.1", 0))
    try:
        forged = JoinClient(b"not the job's key".ljust(32, b"!"), JOB, 0, 0)
        for payload in (_old_style_hello(config, plan)[wire.HEADER_LEN:], forged.next_hello()):
            attacker.sendto(hello(JOB, 0, payload), ps.endpoint.address)
        challenge = answer(attacker, ps)
        # a forged proof: the challenge is answered, but the MAC is made with the wrong key
        attacker.sendto(hello(JOB, 0, forged.next_hello() if challenge is None else
                              _forged_proof(forged, challenge)), ps.endpoint.address)
        ps.mux.drain()
        assert ps.addrs == {}
        gathered, errors = _one_round(ps, worker)
        assert not errors, errors
        assert ps.addrs == {0: worker.endpoint.address}
        for got, sent in zip(gathered[0], _grads()):
            np.testing.assert_array_equal(got, sent)
        assert ps.counters["drop_hello_bad_mac"] == 1
    finally:
        worker.close()
        ps.close()


def _forged_proof(client: JoinClient, challenge: bytes) -> bytes:
    """A well-formed step 3 for the challenge, MAC'd with the client's (wrong) key."""
    client._np = challenge[1:17]    # the attacker skips checking the PS's MAC
    return client.next_hello()


def test_nothing_about_the_job_goes_to_a_sender_without_the_key(attacker):
    config = _config()
    plan = ChunkPlan(LAYERS, CHUNK)
    ps = UdpServerExchange(config, plan, 2, ("127.0.0.1", 0))
    try:
        fp = struct.pack("!I", ps.fingerprint)
        wrong = hello(JOB, 1, struct.pack("!I", ps.fingerprint ^ 1))
        sent = (wrong, _old_style_hello(config, plan, 1), hello(JOB, 1, b"\x01" * 96))
        for packet in sent:
            attacker.sendto(packet, ps.endpoint.address)
        time.sleep(0.05)
        ps.mux.drain()
        answers = _received(attacker)
        assert all(fp not in a[wire.HEADER_LEN:] for a in answers)
        assert sum(map(len, answers)) <= sum(map(len, sent))     # no amplification either
        assert ps.names[1] == "worker rank 1" and ps.addrs == {}
    finally:
        ps.close()


def test_a_recorded_proof_fails_from_another_address_and_against_another_ps(attacker):
    config = _config()
    plan = ChunkPlan(LAYERS, CHUNK)
    ps = UdpServerExchange(config, plan, 1, ("127.0.0.1", 0))
    real = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    real.bind(("127.0.0.1", 0))
    try:
        client = JoinClient(config.job_key, JOB, 0, ps.fingerprint)
        real.sendto(hello(JOB, 0, client.next_hello()), ps.endpoint.address)
        proof = client.on_ack(answer(real, ps))
        attacker.sendto(hello(JOB, 0, proof), ps.endpoint.address)     # raced from elsewhere
        ps.mux.drain()
        assert ps.addrs == {} and ps.counters["drop_hello_stale"] == 1
        assert _received(attacker) == []
        real.sendto(hello(JOB, 0, proof), ps.endpoint.address)
        client.on_ack(answer(real, ps))
        assert client.joined and ps.addrs == {0: real.getsockname()}
        other = UdpServerExchange(config, plan, 1, ("127.0.0.1", 0))   # same job key, new PS
        try:
            real.sendto(hello(JOB, 0, proof), other.endpoint.address)
            assert answer(real, other, timeout=0.3) is None and other.addrs == {}
        finally:
            other.close()
    finally:
        real.close()
        ps.close()


def test_a_replayed_proof_does_not_move_a_bound_rank(attacker):
    """A restarted worker moves its rank with a fresh proof from its new address; a recorded
    proof replayed from another address, or from the rank's old address after the move,
    changes nothing and gets no answer."""
    config = _config()
    plan = ChunkPlan(LAYERS, CHUNK)
    ps = UdpServerExchange(config, plan, 1, ("127.0.0.1", 0))
    first, restarted = (socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(2))
    try:
        for sock in (first, restarted):
            sock.bind(("127.0.0.1", 0))
        client = JoinClient(config.job_key, JOB, 0, ps.fingerprint)
        first.sendto(hello(JOB, 0, client.next_hello()), ps.endpoint.address)
        proof = client.on_ack(answer(first, ps))
        first.sendto(hello(JOB, 0, proof), ps.endpoint.address)
        client.on_ack(answer(first, ps))
        assert client.joined and ps.addrs == {0: first.getsockname()}
        attacker.sendto(hello(JOB, 0, proof), ps.endpoint.address)      # from a new address
        ps.mux.drain()
        assert ps.addrs == {0: first.getsockname()} and ps.counters["drop_hello_stale"] == 1
        assert _received(attacker) == [] and ps.member_events == []
        assert join_from(restarted, ps, config.job_key, JOB, 0, ps.fingerprint).joined
        assert ps.addrs == {0: restarted.getsockname()} and ps.counters["hello_rebind"] == 1
        moved = ps.member_events[0]
        assert moved["change"] == "rebound" and moved["from"] == "%s:%d" % first.getsockname()
        first.sendto(hello(JOB, 0, proof), ps.endpoint.address)     # the old address's proof
        assert answer(first, ps, timeout=0.3) is None
        assert ps.addrs == {0: restarted.getsockname()} and ps.counters["drop_hello_replay"] == 1
        assert ps.counters["hello_rebind"] == 1 and len(ps.member_events) == 2
    finally:
        first.close()
        restarted.close()
        ps.close()


def test_a_worker_with_another_key_is_told_so_and_binds_nothing():
    plan = ChunkPlan(LAYERS, CHUNK)
    ps = UdpServerExchange(_config(), plan, 1, ("127.0.0.1", 0))
    worker = UdpWorkerExchange(_config("--join-timeout", "0.5"), plan, 0, ps.endpoint.address,
                               ("127.0.0.1", 0))
    pump = threading.Event()

    def run_ps() -> None:
        while not pump.is_set():
            ps.mux.drain()
            time.sleep(0.005)

    thread = threading.Thread(target=run_ps)
    thread.start()
    try:
        with pytest.raises(PeerTimeout, match="different --job-key"):
            worker.join()
        assert ps.addrs == {}
    finally:
        pump.set()
        thread.join()
        worker.close()
        ps.close()


def test_tcp_a_connection_that_speaks_first_does_not_take_a_rank():
    config = _config("--transport", "tcp")
    plan = ChunkPlan(LAYERS, CHUNK)
    ps = TcpServerExchange(config, plan, 1, ("127.0.0.1", 0))
    gathered: list = []
    thread = threading.Thread(target=lambda: gathered.append(
        ps.gather(0, (1.0, 1.0)).values[0]))
    thread.start()
    try:
        with socket.create_connection(ps.listener.getsockname()) as rogue:
            rogue.sendall(_old_style_hello(config, plan))
            rogue.settimeout(3)
            assert rogue.recv(4096) == b""          # closed: no challenge for an old HELLO
        worker = TcpWorkerExchange(config, plan, 0, ps.listener.getsockname(), ("127.0.0.1", 0))
        try:
            worker.join()
            worker.push(0, _grads())
            thread.join(timeout=20)
        finally:
            worker.close()
        for got, sent in zip(gathered[0], _grads()):
            np.testing.assert_array_equal(got, sent)
    finally:
        thread.join(timeout=5)
        ps.close()


def _agent(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_agents_need_a_private_job_key(tmp_path):
    done = _agent("hosts.ps", "--workers", "1", "--port", "0")
    assert done.returncode == 2 and "--job-key FILE is required" in done.stderr
    assert "Traceback" not in done.stderr
    loose = tmp_path / "loose.key"
    loose.write_text("ab" * 32)
    loose.chmod(0o644)
    link = tmp_path / "link.key"
    link.symlink_to(loose)
    for key, message in ((loose, "accessible to others"), (link, "is a symlink")):
        done = _agent("hosts.worker", "--rank", "0", "--workers", "1", "--ps", "127.0.0.1",
                      "--job-key", str(key))
        assert done.returncode == 2 and message in done.stderr, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1


def test_tcp_a_silent_connection_holds_the_join_up_briefly_only():
    config = _config("--transport", "tcp", "--join-timeout", "6")
    plan = ChunkPlan(LAYERS, CHUNK)
    ps = TcpServerExchange(config, plan, 1, ("127.0.0.1", 0))
    gathered: list = []
    errors: list[BaseException] = []

    def run_ps() -> None:
        try:
            gathered.append(ps.gather(0, (1.0, 1.0)).values[0])
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)

    thread = threading.Thread(target=run_ps)
    thread.start()
    try:
        with socket.create_connection(ps.listener.getsockname()):     # says nothing
            time.sleep(0.2)
            worker = TcpWorkerExchange(config, plan, 0, ps.listener.getsockname(), ("127.0.0.1", 0))
            try:
                worker.join()
                worker.push(0, _grads())
                thread.join(timeout=20)
            finally:
                worker.close()
        assert not errors, errors
        for got, sent in zip(gathered[0], _grads()):
            np.testing.assert_array_equal(got, sent)
    finally:
        thread.join(timeout=5)
        ps.close()


def _relay(client: socket.socket, server: socket.socket) -> None:
    """Copy bytes both ways until either side closes."""
    with client, server:
        while True:
            ready = select.select([client, server], [], [], 10)[0]
            if not ready:
                return
            for src in ready:
                data = src.recv(65536)
                if not data:
                    return
                (server if src is client else client).sendall(data)


def test_tcp_a_join_the_ps_gave_up_on_is_tried_again_on_a_new_connection():
    """The PS closes a join that outlasts its short handshake timeout (a lost segment on a lossy
    path); the worker then joins again instead of failing the job."""
    config = _config("--transport", "tcp")
    plan = ChunkPlan(LAYERS, CHUNK)
    ps = TcpServerExchange(config, plan, 1, ("127.0.0.1", 0))
    front = socket.create_server(("127.0.0.1", 0))
    relays: list[threading.Thread] = []

    def serve_front() -> None:
        first, _ = front.accept()
        with first:
            first.recv(4096)            # the HELLO arrived; the "PS" gives up on it
        second, _ = front.accept()
        upstream = socket.create_connection(ps.listener.getsockname())
        relay = threading.Thread(target=_relay, args=(second, upstream))
        relay.start()
        relays.append(relay)

    gathered: list = []
    threads = [threading.Thread(target=serve_front),
               threading.Thread(target=lambda: gathered.append(ps.gather(0, (1.0, 1.0)).values[0]))]
    for t in threads:
        t.start()
    worker = TcpWorkerExchange(config, plan, 0, front.getsockname(), ("127.0.0.1", 0))
    try:
        assert worker.join() == 0
        assert worker.counters["join_retries"] == 1
        worker.push(0, _grads())
        threads[1].join(timeout=20)
        for got, sent in zip(gathered[0], _grads()):
            np.testing.assert_array_equal(got, sent)
    finally:
        worker.close()
        for t in [*threads, *relays]:
            t.join(timeout=15)
        front.close()
        ps.close()


def test_tcp_the_ps_names_the_joins_it_refused_when_a_worker_never_joins():
    config = _config("--transport", "tcp", "--join-timeout", "1.5")
    plan = ChunkPlan(LAYERS, CHUNK)
    ps = TcpServerExchange(config, plan, 1, ("127.0.0.1", 0))
    errors: list[BaseException] = []

    def run_ps() -> None:
        try:
            ps.gather(0, (1.0, 1.0))
        except PeerTimeout as exc:
            errors.append(exc)

    thread = threading.Thread(target=run_ps)
    thread.start()
    try:
        with socket.create_connection(ps.listener.getsockname()) as rogue:
            rogue.sendall(_old_style_hello(config, plan))
            rogue.settimeout(3)
            assert rogue.recv(4096) == b""
            thread.join(timeout=10)
        assert len(errors) == 1
        text = str(errors[0])
        assert "workers [0] did not connect" in text and "joins refused: 127.0.0.1:" in text, text
    finally:
        thread.join(timeout=5)
        ps.close()


def test_tcp_a_silent_ps_is_not_asked_again():
    """Silence for the worker's patience ends the join (a retry would only wait as long again)."""
    config = _config("--transport", "tcp", "--peer-timeout", "0.5")
    plan = ChunkPlan(LAYERS, CHUNK)
    front = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    acceptor = threading.Thread(target=lambda: held.append(front.accept()[0]))
    acceptor.start()
    worker = TcpWorkerExchange(config, plan, 0, front.getsockname(), ("127.0.0.1", 0))
    try:
        with pytest.raises(PeerTimeout, match="sent nothing .* during the join"):
            worker.join()
        assert worker.counters["join_retries"] == 0
    finally:
        worker.close()
        acceptor.join(timeout=5)
        for conn in held:
            conn.close()
        front.close()
