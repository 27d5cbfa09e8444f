"""Gradient packets against a local parameter server (loopback only).

Two parts: (1) a real job (``hosts.ps`` and one ``hosts.worker`` process) while mutated gradient
packets hit the PS's port from another socket; the job must finish (exit 0) without a
traceback. (2) the PS's exchange in this process with the fuzzing socket bound as both workers,
so mutated packets get past the address check into the sessions; no packet may raise or take
long.
"""
from __future__ import annotations

import argparse
import random
import socket
import time

from fuzz.job import JOB, LoopbackJob
from fuzz.mutate import mutate_bytes
from fuzz.report import Report
from hosts import wire
from hosts.errors import PeerTimeout
from hosts.exchange.config import add_transport_arguments, config_from_args
from hosts.exchange.udp_server import UdpServerExchange
from hosts.transport.chunking import ChunkPlan

HANG_SECONDS = 2.0


def packet(rng: random.Random, job: int = JOB, rank: int | None = None) -> bytes:
    """A gradient-transport datagram of any kind with random fields, mutated half the time."""
    kind = rng.choice(list(wire.KIND_NAMES) + [10, 15])
    payload = rng.randbytes(rng.choice([0, 4, 8, 32, 256, 1440]))
    hdr = wire.pack_header(kind & 0xF, rng.randrange(256), job, rng.randrange(4) if rank is None else rank,
                           rng.randrange(4), rng.randrange(6), rng.randrange(8), len(payload),
                           rng.randrange(64), rng.randrange(512))
    data = hdr + payload
    return mutate_bytes(rng, data, max_len=65000) if rng.random() < 0.5 else data


def _job_under_fire(rng: random.Random, report: Report, count: int, seconds: float) -> None:
    job = LoopbackJob()
    try:
        job.start_ps()
        time.sleep(1.0)
        job.start_worker()
        start = time.monotonic()
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as fz:
            fz.bind(("127.0.0.1", 0))
            sent = 0
            while sent < count and time.monotonic() - start < seconds and job.running():
                fz.sendto(packet(rng, job=rng.choice([JOB, JOB, 2]), rank=0), ("127.0.0.1", job.ps_port))
                sent += 1
                if sent % 50 == 0:
                    time.sleep(0.005)
        report.tried += sent
        job.finish(report)
    finally:
        job.close()


def _exchange_in_process(rng: random.Random, report: Report, count: int, seconds: float) -> None:
    ap = argparse.ArgumentParser()
    add_transport_arguments(ap)
    config = config_from_args(ap.parse_args(["--job", str(JOB), "--peer-timeout", "1000",
                                             "--join-timeout", "1000", "--deadline-ms", "100000"]),
                              2, seed=0)
    plan = ChunkPlan([256, 40], config.chunk_elems)
    ps = UdpServerExchange(config, plan, 2, ("127.0.0.1", 0))
    start = time.monotonic()
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as fz:
            fz.bind(("127.0.0.1", 0))
            # bound as both workers directly (the join is fuzz/join_first.py's subject)
            for rank in (0, 1):
                ps.rounds.bind(rank, fz.getsockname())
            ps.rounds.open_push(0, config.bounds.required_fraction(pull=False))
            sent = 0
            while sent < count and time.monotonic() - start < seconds:
                batch = [packet(rng) for _ in range(100)]
                for p in batch:
                    fz.sendto(p, ps.endpoint.address)
                sent += len(batch)
                t0 = time.monotonic()
                try:
                    ps.mux.drain()
                    for session in list(ps.mux.sessions.values()):
                        if session.active:
                            session.tick(time.monotonic())
                except PeerTimeout as exc:
                    report.outcomes["peer timeout"] += 1
                    report.fail("hang", str(exc))
                except Exception as exc:  # noqa: BLE001 - that is what we look for
                    report.fail("traceback", f"{type(exc).__name__}: {exc}")
                if time.monotonic() - t0 > HANG_SECONDS:
                    report.fail("hang", f"a batch of 100 packets took {time.monotonic() - t0:.1f} s")
            report.tried += sent
            drops = sum(v for k, v in ps.counters.items() if k.startswith("drop_"))
            report.outcomes["dropped by the PS"] += drops
    finally:
        ps.close()


def run(count: int, seconds: float, seed: int = 1) -> Report:
    """Half of ``count`` packets at a real job, half into the PS's exchange in process."""
    rng = random.Random(seed)
    report = Report("gradients")
    start = time.monotonic()
    _job_under_fire(rng, report, count // 2, seconds / 2)
    _exchange_in_process(rng, report, count - count // 2, seconds / 2)
    report.seconds = time.monotonic() - start
    return report
