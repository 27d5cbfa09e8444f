"""CPU per DATA datagram on the receive side, stage by stage (and the socket part of sending),
for the Python and the native transport core side by side (hosts/transport/core.py), in one run.

Stages, each timed alone over the same datagrams (ltp_incast's gradient: layers 8320, 8256,
650 float32, 360 per chunk, 49 DATA per round, every round complete, ACKs every 16):
  socket   `Endpoint.receive` with its `parse` stubbed out: select + recvmsg_into + TOS + a
           copy, per datagram, over loopback (the datagrams are queued on the socket first);
           with the extension built also on the batched path (`--io batch`: recvmmsg into
           preallocated buffers, the TOS from each message's cmsg, one bytes object per datagram)
  send     the other direction's socket part: `Endpoint.send` of the same datagrams (framed,
           no MAC), ten per step as a window of 10 releases them, then `flush`: one sendmsg
           with the TOS cmsg per datagram, or (`--io batch`) one sendmmsg per step. On loopback
           the kernel delivers to the receiving socket inside the send call, so this includes
           the receive side's kernel work
  parse    `Port.parse`: counters, header unpack and checks (Python in both cores)
  session  `RecvSession.on_packet`: reassembly into the numpy buffers, ACK bookkeeping, early
           close (the part the native core ports), ACK frames included
  dispatch `Router.dispatch` + session: the route to the session by (round, stage) and the above
  whole    the receive path in one piece, not a sum of stages: a round's datagrams queued on a
           loopback socket, then `Mux.receive` until the session is done (its ACKs go out to
           the sending socket), on each I/O path; on `--io batch` with the native core also with
           DATA routed from the socket straight into the core (hosts/transport/data_route.py);
           the native batch rows also with every datagram signed (--packet-mac all) and checked
CPU is process_time over `--rounds` rounds, the best of `--repeat` runs; no wall-clock.
Run: .venv/bin/python benchmarks/recv_core.py [--rounds 400] [--repeat 5]
"""
from __future__ import annotations

import argparse
import os
import socket
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from hosts import wire  # noqa: E402
from hosts.transport import core as transport_core  # noqa: E402
from hosts.transport import mac_impl  # noqa: E402
from hosts.transport.chunking import ChunkPlan  # noqa: E402
from hosts.transport.endpoint import Endpoint, default_io  # noqa: E402
from hosts.transport.mux import Mux  # noqa: E402
from hosts.transport.port import Port  # noqa: E402
from hosts.transport.receiver import ReceiveOptions  # noqa: E402
from hosts.transport.router import Router  # noqa: E402

LAYERS = [8320, 8256, 650]
CHUNK_ELEMS = 360
JOB = 1
SENDER = ("127.0.0.1", 40000)
MAC_KEY = b"k" * 32


def datagrams(plan: ChunkPlan, seed: int = 7) -> list[bytes]:
    """One round's DATA datagrams, interleaved over the layers, with the gradlane arm's TOS."""
    rng = np.random.default_rng(seed)
    grads = [rng.normal(0, 0.01, n).astype(np.float32) for n in plan.layer_sizes]
    out = []
    for layer, count in enumerate(plan.chunk_counts):
        for seq in range(count):
            off = plan.offset(layer, seq)
            payload = grads[layer][off:off + plan.length(layer, seq)].astype(">f4").tobytes()
            out.append((seq / count, wire.pack_header(wire.KIND_DATA, 0, JOB, 0, layer, 0, 4,
                                                      len(payload), seq, off) + payload))
    return [d for _, d in sorted(out, key=lambda x: x[0])]


def _session(port: Port, plan: ChunkPlan, round_: int, core: str):
    return transport_core.recv_session(port, plan, round_, pull=False, senders=[0],
                                       required=(1.0,) * plan.num_layers,
                                       options=ReceiveOptions(deadline=10.0, scope="tensor"),
                                       core=core)


def _round_data(base: list[bytes], round_: int) -> list[bytes]:
    """`base` with the round field set to `round_` (bytes 8..11 of the header)."""
    r = round_.to_bytes(4, "big")
    return [d[:8] + r + d[12:] for d in base]


def per_datagram(core: str, rounds: int, stage: str, base: list[bytes]) -> float:
    """CPU seconds per DATA datagram of one stage on one core."""
    now = 1.0
    port = Port(JOB, wire.PS_RANK, lambda: now)
    plan = ChunkPlan(LAYERS, CHUNK_ELEMS)
    cpu = 0.0
    count = 0
    router = Router(port)
    for r in range(rounds):
        data = _round_data(base, r)
        if stage == "parse":
            t0 = time.process_time()
            for d in data:
                port.parse(d, SENDER, 2)
            cpu += time.process_time() - t0
        else:
            pkts = [port.parse(d, SENDER, 2) for d in data]
            session = _session(port, plan, r, core)
            if stage == "session":
                t0 = time.process_time()
                for p in pkts:
                    session.on_packet(p, now)
                cpu += time.process_time() - t0
            else:
                router.add(session)
                t0 = time.process_time()
                for p in pkts:
                    router.dispatch(p, now)
                cpu += time.process_time() - t0
                router.prune(r + 1)
            assert session.done, "every round completes"
        port.take()
        count += len(data)
    return cpu / count


def socket_per_datagram(rounds: int, base: list[bytes], io: str = "single") -> float:
    """CPU seconds per datagram of `Endpoint.receive` on socket I/O `io`, its parse stubbed
    out, over loopback."""
    ep = Endpoint(("127.0.0.1", 0), JOB, wire.PS_RANK, io=io)
    ep.parse = lambda data, addr, tos: data    # type: ignore[method-assign]
    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    cpu = 0.0
    count = 0
    try:
        for r in range(rounds):
            for d in _round_data(base, r):
                tx.sendto(d, ep.address)
            t0 = time.process_time()
            got = 0
            while got < len(base):
                got += len(ep.receive(1.0))
            cpu += time.process_time() - t0
            count += got
    finally:
        tx.close()
        ep.close()
    return cpu / count


def whole_per_datagram(core: str, rounds: int, base: list[bytes], io: str, route: bool,
                       key: bytes | None = None) -> float:
    """CPU seconds per DATA datagram of `Mux.receive` on core `core` and socket I/O `io`, each
    round's datagrams queued on the socket first; `route`: DATA routed to the native core;
    `key`: every datagram signed under it (--packet-mac all) and checked."""
    ep = Endpoint(("127.0.0.1", 0), JOB, wire.PS_RANK, io=io, mac_key=key,
                  mac_mode="all" if key else "off")
    sign = mac_impl.make(key).sign if key else (lambda d: d)
    mux = Mux(ep)
    mux.route_data = route
    plan = ChunkPlan(LAYERS, CHUNK_ELEMS)
    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    tx.bind(("127.0.0.1", 0))
    tx.setblocking(False)
    cpu = 0.0
    count = 0
    try:
        for r in range(rounds):
            session = _session(ep, plan, r, core)
            mux.add(session)
            for d in [sign(d) for d in _round_data(base, r)]:
                tx.sendto(d, ep.address)
            t0 = time.process_time()
            while not session.done:
                mux.receive(1.0)
            ep.flush()
            cpu += time.process_time() - t0
            count += len(base)
            mux.prune(r + 1)
            try:
                while True:
                    tx.recv(65535)
            except BlockingIOError:
                pass
    finally:
        tx.close()
        ep.close()
    return cpu / count


def send_per_datagram(rounds: int, base: list[bytes], io: str = "single") -> float:
    """CPU seconds per datagram of `Endpoint.send` + `flush` on socket I/O `io`, ten datagrams
    per flush, over loopback."""
    ep = Endpoint(("127.0.0.1", 0), JOB, 0, io=io, mac_mode="off")
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rx.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    rx.bind(("127.0.0.1", 0))
    rx.setblocking(False)
    dest = rx.getsockname()
    tos = [wire.data_tos(i % 8, i % 3 == 0) for i in range(len(base))]
    cpu = 0.0
    count = 0
    try:
        for r in range(rounds):
            data = _round_data(base, r)
            t0 = time.process_time()
            for k in range(0, len(data), 10):
                for i in range(k, min(k + 10, len(data))):
                    ep.send(data[i], dest, tos[i])
                ep.flush()
            cpu += time.process_time() - t0
            count += len(data)
            try:
                while True:
                    rx.recv(65535)
            except BlockingIOError:
                pass
        assert ep.counters["packets_sent"] == count, "every datagram sent"
    finally:
        rx.close()
        ep.close()
    return cpu / count


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=400)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    if args.rounds < 1 or args.repeat < 1:
        ap.error("--rounds and --repeat must be at least 1")
    cores = ["python", "native"] if transport_core.native_available() else ["python"]
    if len(cores) == 1:
        print(f"native core not built ({transport_core.NATIVE_ERROR}): Python core only")
    base = datagrams(ChunkPlan(LAYERS, CHUNK_ELEMS))
    print(f"receive side, {args.rounds} rounds of {len(base)} DATA datagrams ({sum(LAYERS)} float32, "
          f"{CHUNK_ELEMS} per chunk); best of {args.repeat}; load average {os.getloadavg()[0]:.2f}")
    ios = ["single", "batch"] if default_io() == "batch" else ["single"]
    best = {}
    for _ in range(args.repeat):      # interleaved, so both cores see the same machine load
        best["parse"] = min(best.get("parse", 1.0), per_datagram("python", args.rounds, "parse", base))
        for io in ios:
            key = f"socket/{io}"
            best[key] = min(best.get(key, 1.0), socket_per_datagram(args.rounds, base, io))
            key = f"send/{io}"
            best[key] = min(best.get(key, 1.0), send_per_datagram(args.rounds, base, io))
        for core in cores:
            for stage in ("session", "dispatch"):
                key = f"{stage}/{core}"
                best[key] = min(best.get(key, 1.0), per_datagram(core, args.rounds, stage, base))
            for io, route in _whole_paths(core, ios):
                key = f"whole/{core}/{io}/{route}"
                best[key] = min(best.get(key, 1.0),
                                whole_per_datagram(core, args.rounds, base, io, route))
                if io == "batch" and core == "native":    # the same with every datagram signed
                    key += "/mac"
                    best[key] = min(best.get(key, 1.0), whole_per_datagram(
                        core, args.rounds, base, io, route, MAC_KEY))
    us = {k: v * 1e6 for k, v in best.items()}
    sock = us["socket/single"]
    print(f"{'us per DATA datagram':<34}" + "".join(f"{c:>10}" for c in cores))
    print(f"{'socket (select, recvmsg, copy)':<34}" + "".join(f"{sock:>10.2f}" for _ in cores))
    if "batch" in ios:
        batch = us["socket/batch"]
        print(f"{'socket, --io batch (recvmmsg)':<34}" + "".join(f"{batch:>10.2f}" for _ in cores))
    print(f"{'send (Endpoint.send, sendmsg)':<34}" + "".join(f"{us['send/single']:>10.2f}" for _ in cores))
    if "batch" in ios:
        print(f"{'send, --io batch (sendmmsg)':<34}" + "".join(f"{us['send/batch']:>10.2f}" for _ in cores))
    print(f"{'parse (Port.parse)':<34}" + "".join(f"{us['parse']:>10.2f}" for _ in cores))
    print(f"{'session (on_packet)':<34}" + "".join(f"{us['session/' + c]:>10.2f}" for c in cores))
    print(f"{'dispatch (router + session)':<34}" + "".join(f"{us['dispatch/' + c]:>10.2f}" for c in cores))
    print(f"{'receive path total':<34}"
          + "".join(f"{sock + us['parse'] + us['dispatch/' + c]:>10.2f}" for c in cores))
    if "batch" in ios:
        print(f"{'receive path total, --io batch':<34}"
              + "".join(f"{batch + us['parse'] + us['dispatch/' + c]:>10.2f}" for c in cores))
    for io in ios:
        for route in (False, True):
            for mac in ("", "/mac"):
                label = (f"whole path, --io {io}" + (", routed" if route else "")
                         + (", MAC all" if mac else ""))
                keys = [f"whole/{c}/{io}/{route}{mac}" for c in cores]
                if not any(k in us for k in keys):
                    continue
                print(f"{label:<40}" + "".join(f"{us[k]:>10.2f}" if k in us else f"{'-':>10}"
                                               for k in keys))
    print(f"(load average {os.getloadavg()[0]:.2f} at the end)")


def _whole_paths(core: str, ios: list[str]) -> list[tuple[str, bool]]:
    """(I/O path, routed) of the whole-path rows of `core`: routing exists for the native core
    on the batch path only."""
    return [(io, False) for io in ios] + ([("batch", True)]
                                          if core == "native" and "batch" in ios else [])


if __name__ == "__main__":
    main()
