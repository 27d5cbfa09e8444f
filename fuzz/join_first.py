"""A sender that speaks first: mutated joins hit a real PS before its worker starts (loopback).

Before the worker exists and while it joins, a socket without the job's key sends HELLOs for
every rank: the old attack (the configuration's fingerprint, which is guessable), step 1 and
step 3 of the handshake with random nonces and MACs, proofs built on the challenges the PS
sent it, and byte mutations of all of these. The job must still finish its rounds (the
worker's rank was not taken), the PS must answer the fuzzer with no more bytes than it sent,
and with nothing but challenges (no welcome, no fingerprint: it never proved the key).
"""
from __future__ import annotations

import argparse
import random
import socket
import struct
import time

from fuzz.job import JOB, LoopbackJob
from fuzz.mutate import mutate_bytes
from fuzz.report import Report
from hosts import wire
from hosts.exchange import join
from hosts.exchange.config import add_transport_arguments, config_from_args, fingerprint
from hosts.training import dataset
from hosts.training.model_args import add_model_arguments, model_spec
from hosts.transport.chunking import ChunkPlan


def _guessed_fingerprint() -> int:
    """The fingerprint an attacker computes from the job's (public) flags."""
    ap = argparse.ArgumentParser()
    add_model_arguments(ap)
    add_transport_arguments(ap)
    args = ap.parse_args(["--seed", "1", "--hidden", "16", "--job", str(JOB)])
    data = dataset.load(args.seed)
    model = model_spec(args).build(data.num_features, data.num_classes, args.seed)
    plan = ChunkPlan(model.layer_sizes(), args.chunk_elems)
    return fingerprint(plan.layer_sizes, plan.chunk_elems, config_from_args(args, model.num_layers, 1))


def _hello(rng: random.Random, fp: int, challenges: list[bytes]) -> bytes:
    rank = rng.choice([0, 0, 0, 1, 0xFFFE])
    choice = rng.randrange(5)
    if choice == 0:
        payload = struct.pack("!I", fp)
    elif choice == 1:
        payload = (bytes([join.STEP_HELLO]) + rng.randbytes(join.NONCE)).ljust(join.HELLO_LEN, b"\0")
    elif choice == 2 and challenges:
        np_ = rng.choice(challenges)[1:1 + join.NONCE]
        payload = (bytes([join.STEP_PROOF]) + rng.randbytes(join.NONCE) + np_ + struct.pack("!I", fp)
                   + rng.randbytes(join.TAG))
    elif choice == 3:
        payload = bytes([join.STEP_PROOF]) + rng.randbytes(join.PROOF_LEN - 1)
    else:
        payload = rng.randbytes(rng.choice([0, 1, 33, join.HELLO_LEN, join.PROOF_LEN, 300]))
    data = wire.pack_header(wire.KIND_HELLO, 0, rng.choice([JOB, JOB, JOB, 2]), rank,
                            wire.ALL_LAYERS, 0, 0, len(payload)) + payload
    return mutate_bytes(rng, data, max_len=2000) if rng.random() < 0.3 else data


def _collect(fz: socket.socket, answers: list[bytes]) -> None:
    while True:
        try:
            answers.append(fz.recv(65535))
        except BlockingIOError:
            return


def run(count: int, seconds: float, seed: int = 1) -> Report:
    """``count`` HELLOs at a PS whose worker starts after the first half of them."""
    rng = random.Random(seed)
    report = Report("join-first")
    start = time.monotonic()
    job = LoopbackJob()
    fp = _guessed_fingerprint()
    answers: list[bytes] = []
    challenges: list[bytes] = []
    sent_bytes = 0
    try:
        job.start_ps()
        time.sleep(1.0)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as fz:
            fz.bind(("127.0.0.1", 0))
            fz.setblocking(False)
            sent = 0
            while sent < count and time.monotonic() - start < seconds and job.running():
                if sent == count // 2:
                    job.start_worker()
                data = _hello(rng, fp, challenges)
                fz.sendto(data, ("127.0.0.1", job.ps_port))
                sent += 1
                sent_bytes += len(data)
                if sent % 50 == 0:
                    time.sleep(0.005)
                    _collect(fz, answers)
                    challenges = [a[wire.HEADER_LEN:] for a in answers[-20:]]
            if "worker" not in job.procs:
                job.start_worker()
            time.sleep(0.2)
            _collect(fz, answers)
        report.tried += sent
        job.finish(report)
    finally:
        job.close()
    others = [a for a in answers if len(a) != wire.HEADER_LEN + join.CHALLENGE_LEN
              or a[wire.HEADER_LEN] != join.STEP_CHALLENGE]
    report.outcomes["challenges to the fuzzer"] += len(answers) - len(others)
    if others:
        report.fail("crash", f"the PS sent {len(others)} answers other than challenges to a "
                             f"sender without the key, e.g. {others[0][:64].hex()}")
    if sum(map(len, answers)) > sent_bytes:
        report.fail("crash", f"the PS answered {sum(map(len, answers))} bytes to {sent_bytes} sent")
    report.seconds = time.monotonic() - start
    return report
