"""The agents' software time per datagram: CPU seconds the Python transport (hosts/transport:
Endpoint, Mux, SendSession, RecvSession) spends on one datagram it receives and on one it sends,
measured on this machine over loopback UDP.

Two processes run the agents' own loop: a sender pushes `--rounds` rounds of ltp_incast's
gradient (layers 8320, 8256, 650 float32, 360 per chunk: 49 DATA packets) with the gradlane
arm's flags to a receiver that acknowledges them. Each process measures the CPU time of its
loop alone (process_time, so waiting and other processes' load do not count; imports and the
gradients' generation are outside it) and counts what it received and sent. Receiving a DATA
packet and sending an ACK are the receiver's work, the reverse the sender's, so the two
processes give two equations in the two unknowns, seconds per received and per sent datagram.

These are the values the simulator's host model takes (`params.sim_host_rx_us` /
`sim_host_tx_us`, docs/ns3.md "Host software time"): measured here, not fitted to a figure.

`--cores python,native` runs the receiver on each transport core in turn (hosts/transport/
core.py; the sender is Python in both), interleaved in one run. The two-equation solve holds
for the Python core only (both processes then receive with the same code); for the native core
the receiver's rx is solved with the Python run's tx (its ACKs go out through the same Python
port): rx = (receiver CPU - tx x ACKs sent) / DATA received. `recv us/in` is the receiver's
whole CPU per datagram it received, ACKs included: no model. `dgrams/wake`: datagrams the
receiver's loop took per wake that brought any (each wake costs a tick, a select and a failed
recvmsg besides the datagrams' own work).
`--ios single,batch` runs every row once per socket I/O path of both processes (hosts/
transport/endpoint.py: one sendmsg / recvmsg_into per datagram, or sendmmsg / recvmmsg per
step); a native row takes the tx of the Python row on the same path.
`--send-cores python,native` runs every row once per sender core (hosts/transport/
data_frames.py: DATA framed in Python, or natively and, on the batch path, straight into the
send queue). A native sender's tx is solved from its own CPU with the rx of the all-Python row
of the same repetition and path (the sender takes in ACKs with the Python code in both):
tx = (sender CPU - rx x ACKs received) / datagrams sent. `send us/out` is the sender's whole
CPU per datagram it sent, its ACK handling included: no model.
Run: .venv/bin/python benchmarks/agent_cost.py [--rounds 200] [--repeat 3] [--cores python,native]
     [--ios single,batch] [--send-cores python,native]
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from hosts import wire  # noqa: E402
from hosts.exchange.config import add_transport_arguments, config_from_args  # noqa: E402
from hosts.transport import core as transport_core  # noqa: E402
from hosts.transport.bounds import LossBudget  # noqa: E402
from hosts.transport.chunking import ChunkPlan  # noqa: E402
from hosts.transport.endpoint import IO_MODES, Endpoint, default_io  # noqa: E402
from hosts.transport.mux import Mux  # noqa: E402
from hosts.transport.receiver import ReceiveOptions, RecvSession  # noqa: E402
from hosts.transport.sender import SendSession  # noqa: E402

LAYERS = [8320, 8256, 650]          # ltp_incast's MLP 64-128-64-10 (model.hidden "128,64")
CHUNK_ELEMS = 360
GRADLANE_FLAGS = ["--bound", "0.1", "--bound-scope", "tensor", "--order", "interleave", "--cc", "ecn",
                  "--reliable-pull", "--window", "10"]


def _config():
    parser = argparse.ArgumentParser(add_help=False)
    add_transport_arguments(parser)
    args = parser.parse_args(["--transport", "ltp", "--chunk-elems", str(CHUNK_ELEMS), *GRADLANE_FLAGS])
    return config_from_args(args, len(LAYERS), 1)


def _receiver(rounds: int, port_out, result_out, core: str = "python", io: str = "single",
              route: bool = True) -> None:
    config, plan = _config(), ChunkPlan(LAYERS, CHUNK_ELEMS)
    ep = Endpoint(("127.0.0.1", 0), config.job_id, wire.PS_RANK, io=io)
    mux = Mux(ep)
    mux.route_data = route
    wakes = [0]
    receive = mux.receive

    def counted(timeout: float) -> None:
        """The loop's receive, counting its wakes that brought datagrams."""
        before = ep.counters["packets_received"]
        receive(timeout)
        wakes[0] += ep.counters["packets_received"] != before

    mux.receive = counted
    port_out.send(ep.address[1])

    def open_round(r: int) -> RecvSession:
        s = transport_core.recv_session(
            ep, plan, r, pull=False, senders=[0], required=config.bounds.required_fraction(pull=False),
            options=ReceiveOptions(deadline=config.push_deadline.initial, absent_timeout=30.0,
                                   scope=config.bounds.scope, ack_delay=config.ack_delay), core=core)
        mux.add(s)
        return s

    session = open_round(0)
    cpu = 0.0
    for r in range(rounds):
        t0 = time.process_time()
        mux.run(lambda: session.done)
        nxt = open_round(r + 1) if r + 1 < rounds else None
        cpu += time.process_time() - t0
        mux.prune(r)
        session = nxt
    t0 = time.process_time()
    end = time.monotonic() + 0.3           # answer the last probes, as tensor_exchange does
    mux.run(lambda: time.monotonic() >= end)
    cpu += time.process_time() - t0
    c = ep.counters
    result_out.send((cpu, c["packets_received"], c["packets_sent"], wakes[0]))
    ep.close()


def _sender(rounds: int, port: int, result_out, io: str = "single", core: str = "python") -> None:
    config, plan = _config(), ChunkPlan(LAYERS, CHUNK_ELEMS)
    ep = Endpoint(("127.0.0.1", 0), config.job_id, 0, io=io)
    mux = Mux(ep)
    rng = np.random.default_rng(7)
    gradients = [[rng.normal(0, 0.01, n).astype(np.float32) for n in LAYERS] for _ in range(rounds)]
    cpu = 0.0
    for r in range(rounds):
        t0 = time.process_time()
        sender = SendSession(ep, ("127.0.0.1", port), wire.PS_RANK, plan, gradients[r], r, pull=False,
                             options=config.send, critical_layers=config.bounds.critical_layers(pull=False),
                             budget=LossBudget.of(config.bounds.push, plan, config.bounds.scope),
                             core=core)
        mux.add(sender)
        mux.run(lambda: sender.done)
        mux.prune(r)
        cpu += time.process_time() - t0
    c = ep.counters
    result_out.send((cpu, c["packets_received"], c["packets_sent"]))
    ep.close()


def measure(rounds: int, core: str = "python", tx_us: float | None = None,
            io: str = "single", send_core: str = "python",
            rx_us: float | None = None, route: bool = True) -> dict[str, float]:
    """One sender (on `send_core`) and one receiver (on `core`), both on socket I/O `io`, for
    `rounds` rounds: CPU seconds per received and per sent datagram, solved from both processes'
    CPU time and counts (given `tx_us`, the receiver's rx from its own CPU time alone; given
    `rx_us`, the sender's tx from its own). `route`: the receiver's Mux routes DATA to native
    sessions straight from the socket where it can (hosts/transport/data_route.py)."""
    ctx = mp.get_context("fork")
    port_in, port_out = ctx.Pipe(duplex=False)
    rres_in, rres_out = ctx.Pipe(duplex=False)
    sres_in, sres_out = ctx.Pipe(duplex=False)
    recv = ctx.Process(target=_receiver, args=(rounds, port_out, rres_out, core, io, route))
    recv.start()
    port = port_in.recv()
    send = ctx.Process(target=_sender, args=(rounds, port, sres_out, io, send_core))
    send.start()
    try:
        r_cpu, r_in, r_out, r_wakes = rres_in.recv()
        s_cpu, s_in, s_out = sres_in.recv()
    finally:
        for p in (send, recv):
            p.join(timeout=30)
            if p.is_alive():
                os.kill(p.pid, 9)
                p.join()
    # r_cpu = rx * r_in + tx * r_out ; s_cpu = rx * s_in + tx * s_out
    a = np.array([[r_in, r_out], [s_in, s_out]], dtype=float)
    rx, tx = np.linalg.solve(a, np.array([r_cpu, s_cpu]))
    if tx_us is not None:
        rx = (r_cpu - tx_us / 1e6 * r_out) / r_in
    if rx_us is not None:
        tx = (s_cpu - rx_us / 1e6 * s_in) / s_out
    return {"core": core, "io": io, "send_core": send_core, "route": route,
            "send_us_out": s_cpu / s_out * 1e6,
            "per_wake": r_in / max(r_wakes, 1), "rx_us": rx * 1e6, "tx_us": tx * 1e6,
            "recv_us_in": r_cpu / r_in * 1e6,
            "recv_cpu_s": r_cpu, "send_cpu_s": s_cpu,
            "recv_in": r_in, "recv_out": r_out, "send_in": s_in, "send_out": s_out,
            "mean_us": (r_cpu + s_cpu) / (r_in + r_out + s_in + s_out) * 1e6}


def _receivers(cores: list[str], io: str, route_modes: list[str]) -> list[tuple[str, str]]:
    """(core, routing) of each receiver row: routing matters for a native core on batch I/O
    only ("-" elsewhere, where nothing is routed)."""
    out = []
    for core in cores:
        if core == "native" and io == "batch":
            out += [(core, mode) for mode in route_modes]
        else:
            out.append((core, "-"))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cores", default="python",
                    help="comma-separated receive cores to measure in turn: python, native")
    ap.add_argument("--ios", default="single",
                    help="comma-separated socket I/O paths to measure in turn: single, batch")
    ap.add_argument("--send-cores", default="python",
                    help="comma-separated sender cores (DATA framing) to measure in turn: python, native")
    ap.add_argument("--route-data", default="on",
                    help="comma-separated: on (DATA of native sessions routed from the socket "
                         "into the core, the default), off (every datagram parsed in Python); "
                         "each native batch row runs once per setting")
    args = ap.parse_args()
    route_modes = [x.strip() for x in args.route_data.split(",") if x.strip()]
    if not route_modes or any(x not in ("on", "off") for x in route_modes):
        ap.error(f"--route-data {args.route_data!r}: choose among on, off")
    ios = [x.strip() for x in args.ios.split(",") if x.strip()]
    if not ios or any(x not in IO_MODES for x in ios):
        ap.error(f"--ios {args.ios!r}: choose among {', '.join(IO_MODES)}")
    if "batch" in ios and default_io() != "batch":
        ap.error(f"--ios batch: the native extension is not built ({transport_core.NATIVE_ERROR})")
    cores = [c.strip() for c in args.cores.split(",") if c.strip()]
    bad = [c for c in cores if c not in transport_core.CORES]
    if bad or not cores:
        ap.error(f"--cores: {', '.join(bad) or 'none'} not among {', '.join(transport_core.CORES)}")
    if "native" in cores and not transport_core.native_available():
        ap.error(f"--cores native: the native core is not built ({transport_core.NATIVE_ERROR})")
    if "native" in cores and "python" not in cores:
        cores.insert(0, "python")     # the native rows take the Python run's tx
    send_cores = [c.strip() for c in args.send_cores.split(",") if c.strip()]
    bad = [c for c in send_cores if c not in transport_core.CORES]
    if bad or not send_cores:
        ap.error(f"--send-cores: {', '.join(bad) or 'none'} not among {', '.join(transport_core.CORES)}")
    if "native" in send_cores and not transport_core.native_available():
        ap.error(f"--send-cores native: the native core is not built ({transport_core.NATIVE_ERROR})")
    if "native" in send_cores and "python" not in send_cores:
        send_cores.insert(0, "python")     # the native sender's rows take the Python run's rx
    load = os.getloadavg()[0]
    print(f"ltp_incast's gradlane push, 1 sender -> 1 receiver over loopback, {args.rounds} rounds of "
          f"{len(LAYERS)} layers ({sum(LAYERS)} float32, {CHUNK_ELEMS} per chunk); load average {load:.2f}")
    print(f"{'run':<5}{'core':<8}{'send':<8}{'io':<8}{'route':<7}{'rx us/dgram':>13}{'tx us/dgram':>13}"
          f"{'recv us/in':>12}{'send us/out':>13}{'mean us':>9}"
          f"{'recv: in/out':>16}{'send: in/out':>16}{'cpu s recv/send':>18}{'dgrams/wake':>13}")
    rows = []
    for i in range(args.repeat):
        for io in ios:
            tx_us = rx_us = None
            for send_core in send_cores:     # interleaved: every core and path meets the same load
                for core, route in _receivers(cores, io, route_modes):
                    m = measure(args.rounds, core, tx_us if core == "native" else None, io, send_core,
                                rx_us if send_core == "native" else None, route == "on")
                    if core == "python" and send_core == "python":
                        tx_us, rx_us = m["tx_us"], m["rx_us"]
                    rows.append(m)
                    print(f"{i + 1:<5}{core:<8}{send_core:<8}{io:<8}{route:<7}{m['rx_us']:>13.1f}{m['tx_us']:>13.1f}"
                          f"{m['recv_us_in']:>12.1f}{m['send_us_out']:>13.1f}"
                          f"{m['mean_us']:>9.1f}{m['recv_in']:>9}/{m['recv_out']:<6}{m['send_in']:>9}/"
                          f"{m['send_out']:<6}{m['recv_cpu_s']:>9.2f}/{m['send_cpu_s']:<8.2f}"
                          f"{m['per_wake']:>13.2f}", flush=True)
    for io in ios:
        for send_core in send_cores:
            for core, route in _receivers(cores, io, route_modes):
                mine = [r for r in rows if r["core"] == core and r["io"] == io
                        and r["send_core"] == send_core and r["route"] == (route == "on")]
                routed = f", routing {route}" if route != "-" else ""
                print(f"median, {core} receiver{routed}, {send_core} sender, {io} I/O: rx "
                      f"{statistics.median(r['rx_us'] for r in mine):.1f} us, "
                      f"tx {statistics.median(r['tx_us'] for r in mine):.1f} us per datagram, receiver "
                      f"{statistics.median(r['recv_us_in'] for r in mine):.1f} us per datagram received, "
                      f"sender {statistics.median(r['send_us_out'] for r in mine):.1f} us per datagram sent")
    print(f"(load average {os.getloadavg()[0]:.2f} at the end)")


if __name__ == "__main__":
    main()
