"""What authentication costs the transport: the keyed join, a MAC on every DATA packet, and
per round the three --packet-mac modes (off, control, all), each MAC computed by the native
extension (OpenSSL, native/packet_mac.cpp) and by the Python reference (hosts/transport/
packet_mac.py).

Join: wall time of a worker's join (two round trips over loopback, HMAC-SHA256 on both sides)
against one bare round trip between the same sockets (the old join's cost: one HELLO, one
HELLO_ACK), and the handshake's CPU time alone. Per packet: what sending and receiving one
DATA packet costs today (header packing and sendto; validation, reassembly and ACK bookkeeping
at the receiver), beside what the --packet-mac trailer adds (sign at the sender, verify at the
receiver), Python and native, and a keyed BLAKE2s tag for comparison. Per round: one PS and two
workers on loopback push and pull the default MLP's gradients (4810 float32), each mode with
each MAC implementation interleaved round by round so that the machine's noise hits them
alike; the median round time and the datagrams per round. The receive core and socket I/O are
the defaults (native core and batched I/O where built) unless --core / --io say otherwise.
All arms in one run.
Run: .venv/bin/python benchmarks/join_auth.py [--joins N] [--packets N] [--chunk-elems N] [--rounds N]
     [--core native|python] [--io batch|single] [--only rounds|packets|join ...] [--json PATH]
"""
from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import secrets
import socket
import statistics
import threading
import time

import numpy as np

from hosts import wire
from hosts.exchange.config import add_transport_arguments, config_from_args
from hosts.exchange.join import JoinClient, JoinServer
from hosts.exchange.udp_server import UdpServerExchange
from hosts.exchange.udp_worker import UdpWorkerExchange
from hosts.transport import mac_impl, packet_mac
from hosts.transport.chunking import ChunkPlan
from hosts.transport.counters import Counters
from hosts.transport.endpoint import Endpoint
from hosts.transport.receiver import ReceiveOptions, RecvSession

JOB = 1
LOCAL = ("127.0.0.1", 0)


def _config(chunk_elems: int):
    ap = argparse.ArgumentParser()
    add_transport_arguments(ap)
    return config_from_args(ap.parse_args(["--job", str(JOB), "--chunk-elems", str(chunk_elems)]),
                            2, seed=0)


def _ms(values: list[float]) -> str:
    return f"median {statistics.median(values) * 1e3:.3f} ms, p90 {sorted(values)[int(len(values) * 0.9)] * 1e3:.3f} ms"


def measure_join(joins: int, chunk_elems: int) -> None:
    config = _config(chunk_elems)
    plan = ChunkPlan([4160, 650], chunk_elems)
    ps = UdpServerExchange(config, plan, joins, LOCAL)
    stop = threading.Event()

    def pump() -> None:
        while not stop.is_set():
            for pkt in ps.endpoint.receive(0.01):
                ps.mux.dispatch(pkt, time.monotonic())

    thread = threading.Thread(target=pump)
    thread.start()
    join_s, rtt_s = [], []
    try:
        for rank in range(joins):
            worker = UdpWorkerExchange(config, plan, rank, ps.endpoint.address, LOCAL)
            try:
                t0 = time.perf_counter()
                worker.join()
                join_s.append(time.perf_counter() - t0)
                # one bare round trip between the same two sockets: a PCN_START the PS answers
                t0 = time.perf_counter()
                worker.endpoint.send_control(wire.KIND_PCN_START, ps.endpoint.address, 0)
                while not worker.endpoint.receive(1.0):
                    pass
                rtt_s.append(time.perf_counter() - t0)
            finally:
                worker.close()
    finally:
        stop.set()
        thread.join()
        ps.close()
    key = secrets.token_bytes(32)
    server = JoinServer(key, JOB, 1, 0, Counters())
    addr = ("127.0.0.1", 4000)
    cpu = []
    for _ in range(joins * 20):
        t0 = time.perf_counter()
        client = JoinClient(key, JOB, 0, 0)
        proof = client.on_ack(server.on_hello(0, addr, client.next_hello()).reply)
        client.on_ack(server.on_hello(0, addr, proof).reply)
        cpu.append(time.perf_counter() - t0)
    print(f"join over loopback ({joins} workers): {_ms(join_s)}")
    print(f"one bare round trip, same sockets (the old join): {_ms(rtt_s)}")
    print(f"handshake CPU, PS and worker together: median {statistics.median(cpu) * 1e6:.1f} us")


def measure_per_packet(packets: int, chunk_elems: int, impls: tuple[str, ...]) -> None:
    plan = ChunkPlan([chunk_elems * 512], chunk_elems)
    values = np.random.default_rng(1).standard_normal(plan.layer_sizes[0]).astype(np.float32)
    datagrams = []
    for chunk in plan.split([values]):
        payload = chunk.values.astype(">f4").tobytes()
        datagrams.append(wire.pack_header(wire.KIND_DATA, 0, JOB, 0, chunk.layer, 0, chunk.mag_class,
                                          len(payload), chunk.seq, chunk.offset) + payload)
    sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sink.bind(LOCAL)
    receiver = Endpoint(LOCAL, JOB, wire.PS_RANK)
    sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    key = secrets.token_bytes(32)
    n = len(datagrams)
    rounds = max(packets // n, 1)
    total = rounds * n

    def per_packet(fn) -> float:
        t0 = time.perf_counter()
        fn()
        return (time.perf_counter() - t0) / total * 1e6

    def send() -> None:
        for r in range(rounds):
            for chunk in plan.split([values]):
                payload = chunk.values.astype(">f4").tobytes()
                sender.sendto(wire.pack_header(wire.KIND_DATA, 0, JOB, 0, chunk.layer, r,
                                               chunk.mag_class, len(payload), chunk.seq,
                                               chunk.offset) + payload, sink.getsockname())
            while True:      # keep the sink's buffer from overflowing between rounds
                sink.setblocking(False)
                try:
                    sink.recv(65535)
                except BlockingIOError:
                    break

    def receive() -> None:
        for r in range(rounds):
            session = RecvSession(receiver, plan, r, pull=False, senders=[0], required=(1.0,),
                                  options=ReceiveOptions(deadline=60.0))
            for d in datagrams:
                pkt = receiver.parse(d, ("127.0.0.1", 4000))
                session.on_packet(pkt, 0.0)

    tags = [hmac.digest(key, d, hashlib.sha256)[:16] for d in datagrams]
    signed = [packet_mac.sign(key, d) for d in datagrams]

    def mac_both(impl: str):  # noqa: ANN202
        mac = mac_impl.make(key, impl)

        def run() -> None:
            for _ in range(rounds):
                for d, s in zip(datagrams, signed):
                    mac.sign(d)              # sender
                    mac.verify(s)            # receiver
        return run

    def blake_both() -> None:
        for _ in range(rounds):
            for d in datagrams:
                hashlib.blake2s(d, key=key, digest_size=16).digest()
                hmac.compare_digest(hashlib.blake2s(d, key=key, digest_size=16).digest(), tags[0])

    try:
        for fn in (send, receive, mac_both("python")):    # warm-up
            fn()
        send_us = per_packet(send)
        recv_us = per_packet(receive)
        mac_us = {impl: per_packet(mac_both(impl)) for impl in impls}
        blake_us = per_packet(blake_both)
    finally:
        sink.close()
        sender.close()
        receiver.close()
    today = send_us + recv_us
    print(f"per DATA packet ({len(datagrams[0])} B datagrams, {total} packets):")
    print(f"  today: send {send_us:.2f} us + receive {recv_us:.2f} us = {today:.2f} us")
    for impl, us in mac_us.items():
        print(f"  + --packet-mac trailer, {impl} (sign and verify): {us:.2f} us = "
              f"+{us / today * 100:.0f}%")
    print(f"  + keyed BLAKE2s tag (sign and verify): {blake_us:.2f} us = +{blake_us / today * 100:.0f}%")


class _Job:
    """A PS and two workers on loopback with one --packet-mac mode, kept open across rounds."""

    def __init__(self, mode: str, impl: str, chunk_elems: int, extra: list[str]) -> None:
        ap = argparse.ArgumentParser()
        add_transport_arguments(ap)
        config = config_from_args(ap.parse_args(["--job", str(JOB), "--chunk-elems", str(chunk_elems),
                                                 "--packet-mac", mode, "--reliable-pull",
                                                 "--bound", "0", *extra]), 2, seed=0)
        self.core, self.io = config.core, config.io
        self.plan = ChunkPlan([4160, 650], chunk_elems)
        self.ps = UdpServerExchange(config, self.plan, 2, LOCAL)
        self.workers = [UdpWorkerExchange(config, self.plan, r, self.ps.endpoint.address, LOCAL)
                        for r in range(2)]
        for ep in (self.ps.endpoint, *(w.endpoint for w in self.workers)):
            if ep.mac_key is not None:
                ep.mac = mac_impl.make(ep.mac_key, impl)
        self.grads = [np.ones(n, dtype=np.float32) for n in self.plan.layer_sizes]
        self.round = 0

    @staticmethod
    def _run_all(calls) -> None:  # noqa: ANN001
        threads = [threading.Thread(target=c) for c in calls]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    def one_round(self, last: bool = False) -> float:
        r = self.round

        def ps() -> None:
            g = self.ps.gather(r, (1.0, 1.0))
            self.ps.scatter(r, g.values[0], last, None if last else (1.0, 1.0))

        def worker(w) -> None:  # noqa: ANN001
            if r == 0:
                w.join()      # the PS answers HELLOs while it gathers
            w.push(r, self.grads)
            w.pull(r)

        t0 = time.perf_counter()
        self._run_all([ps, *(lambda w=w: worker(w) for w in self.workers)])
        self.round += 1
        return time.perf_counter() - t0

    def close(self) -> None:
        for w in self.workers:
            w.close()
        self.ps.close()


def measure_rounds(rounds: int, chunk_elems: int, impls: tuple[str, ...], extra: list[str],
                   json_path: str | None = None) -> None:
    arms = [("off", "-")] + [(m, impl) for m in ("control", "all") for impl in impls]
    modes = [f"{m} {impl}" for m, impl in arms]
    jobs = {f"{m} {impl}": _Job(m, impl, chunk_elems, extra) for m, impl in arms}
    times: dict[str, list[float]] = {m: [] for m in modes}
    try:
        for m in modes:
            jobs[m].one_round()           # the join, not timed
        for i in range(rounds):
            for m in modes:
                times[m].append(jobs[m].one_round(last=i == rounds - 1))
        sent = {m: jobs[m].ps.counters["packets_sent"] + sum(w.counters["packets_sent"]
                                                               for w in jobs[m].workers)
                for m in modes}
    finally:
        for job in jobs.values():
            job.close()
    off = jobs["off -"]
    base = statistics.median(times["off -"])
    print(f"per round (PS + 2 workers on loopback, {sum(off.plan.layer_sizes)} float32 pushed "
          f"and pulled in {chunk_elems}-value chunks, core {off.core}, io {off.io}, {rounds} rounds "
          f"per arm, interleaved):")
    for m in modes:
        med = statistics.median(times[m])
        mode, impl = m.split()
        control = f"control {impl}"
        vs = (f", {med / statistics.median(times[control]):.3f}x control {impl}"
              if mode == "all" and control in times else "")
        print(f"  --packet-mac {mode:<7} MAC {impl:<6}: {_ms(times[m])}, {med / base:.3f}x off{vs}; "
              f"{sent[m] / (rounds + 1):.0f} datagrams per round")
    # the same ratio paired round by round (each interleaved round of `all` over `control`)
    for impl in impls:
        pairs = [a / c for a, c in zip(times[f"all {impl}"], times[f"control {impl}"])]
        print(f"  all / control, MAC {impl}, paired per round: median {statistics.median(pairs):.3f}x "
              f"(n={len(pairs)})")
    if json_path:     # every round's time per arm, to pool repeated runs
        with open(json_path, "w") as f:
            json.dump({"core": off.core, "io": off.io, "chunk_elems": chunk_elems, "seconds": times}, f)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--joins", type=int, default=50)
    ap.add_argument("--packets", type=int, default=100_000)
    ap.add_argument("--chunk-elems", type=int, default=64, help="float32 values per DATA packet")
    ap.add_argument("--rounds", type=int, default=200, help="rounds per --packet-mac arm")
    ap.add_argument("--core", choices=("native", "python"), help="receive core (default: the agents')")
    ap.add_argument("--io", choices=("batch", "single"), help="socket I/O (default: the agents')")
    ap.add_argument("--only", nargs="+", choices=("join", "packets", "rounds"),
                    default=["join", "packets", "rounds"], help="which measurements to run")
    ap.add_argument("--json", metavar="PATH", help="write every round's time per arm here")
    args = ap.parse_args()
    impls = ("python", "native") if mac_impl.native_available() else ("python",)
    if not mac_impl.native_available():
        print("native packet MAC not built: Python MAC only")
    extra = [f for flag, v in (("--core", args.core), ("--io", args.io)) if v for f in (flag, v)]
    if "join" in args.only:
        measure_join(args.joins, args.chunk_elems)
    if "packets" in args.only:
        measure_per_packet(args.packets, args.chunk_elems, impls)
    if "rounds" in args.only:
        measure_rounds(args.rounds, args.chunk_elems, impls, extra, args.json)


if __name__ == "__main__":
    main()
