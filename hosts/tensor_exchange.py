"""Exchange random tensors (no model) between senders and one receiver, round after round:
the transport alone, for path tests and benchmarks. Logs one JSON line per round.

Run: python -m hosts.tensor_exchange recv --port P --senders N --layers 4160,650 --rounds R
     python -m hosts.tensor_exchange send --to HOST:PORT --rank K --layers 4160,650 --rounds R
Both take the transport flags of the agents (--transport ltp|mlt|tcp, --bound, ...).
"""
from __future__ import annotations

import argparse
import socket
import sys
import time
from typing import Callable

import numpy as np

from hosts import wire
from hosts.cli import check_port, parse_hostport, run_agent
from hosts.errors import ConfigError, PeerTimeout
from hosts.exchange import tcp_options
from hosts.exchange.config import (TransportConfig, add_transport_arguments, config_from_args,
                                   with_chunk_plan)
from hosts.exchange.tcp import FrameStream, encode_layers, read_layers
from hosts.jsonlog import JsonLog
from hosts.transport.bounds import LossBudget, sub_chunk_notes
from hosts.transport.chunking import ChunkPlan
from hosts.transport.counters import Counters
from hosts.transport.deadline import Deadline
from hosts.transport.endpoint import Endpoint
from hosts.transport.mux import Mux
from hosts.transport.core import recv_session
from hosts.transport.receiver import RecvSession
from hosts.transport.sender import SendSession


def random_layers(plan: ChunkPlan, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.normal(scale=1e-2, size=n).astype(np.float32) for n in plan.layer_sizes]


def receive_rounds(config: TransportConfig, plan: ChunkPlan, senders: int, rounds: int,
                   bind: tuple[str, int], log: JsonLog,
                   ready: Callable[[int], None] | None = None) -> None:
    """Receive `rounds` rounds from ranks 0..senders-1, logging each round."""
    if config.kind == "tcp":
        _receive_tcp(config, plan, senders, rounds, bind, log, ready)
        return
    ep = Endpoint(bind, config.job_id, wire.PS_RANK, plain=config.plain, mac_key=config.mac_key,
                                 mac_mode=config.mac_mode, io=config.io)
    mux = Mux(ep)
    required = config.bounds.required_fraction(pull=False)
    deadline = Deadline(config.push_deadline)

    def open_round(r: int) -> RecvSession:
        absent = config.join_timeout if r == 0 else config.peer_timeout
        s = recv_session(ep, plan, r, pull=False, senders=list(range(senders)), required=required,
                         options=config.receive_options(deadline.current(), absent),
                         core=config.core)
        mux.add(s)
        return s

    try:
        log.write("listening", port=ep.address[1])
        if ready:
            ready(ep.address[1])
        session = open_round(0)
        for r in range(rounds):
            before = ep.counters.snapshot()
            mux.run(lambda: session.done)
            transfers = [s.closed_at - s.first_data for s in session.senders.values()
                         if s.first_data is not None and s.closed_at is not None]
            if transfers:
                deadline.observe(max(transfers))
            nxt = open_round(r + 1) if r + 1 < rounds else None
            mux.drain()
            firsts = [s.first_data for s in session.senders.values() if s.first_data]
            delta = ep.counters.since(before)
            fr = session.fractions()
            log.write("round", round=r,
                      seconds=round((session.finished or time.monotonic()) - min(firsts), 6),
                      delivered=[round(min(f[i] for f in fr.values()), 4)
                                 for i in range(plan.num_layers)],
                      closed_by=sorted({str(c) for c in session.closed_by().values()}),
                      deadline_ms=round(session.options.deadline * 1000, 3),
                      bytes=delta.get("bytes_received", 0),
                      payload_bytes=int(sum(sum(s.buffer.delivered_elems) * 4
                                            for s in session.senders.values())),
                      retx_received=delta.get("retx_received", 0),
                      resends=delta.get("retx_received", 0),
                      drops={k: v for k, v in delta.items() if k.startswith("drop_")})
            mux.prune(r)
            session = nxt
        # answer late probes of the last round for a moment (lost STOPs)
        end = time.monotonic() + 0.3
        mux.run(lambda: time.monotonic() >= end)
    finally:
        ep.close()


def _receive_tcp(config, plan, senders, rounds, bind, log, ready) -> None:
    tcp_options.check_ecn(config.tcp_ecn)
    lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        tcp_options.tune(lsock, config.tcp_cc)
        lsock.bind(bind)
    except OSError as exc:
        raise ConfigError(f"cannot bind TCP {bind[0]}:{bind[1]}: {exc.strerror}") from None
    lsock.listen(senders)
    lsock.settimeout(config.join_timeout)
    log.write("listening", port=lsock.getsockname()[1])
    if ready:
        ready(lsock.getsockname()[1])
    counters = Counters()
    streams = {}
    try:
        while len(streams) < senders:
            try:
                conn, _ = lsock.accept()
            except socket.timeout:
                raise PeerTimeout(f"only {len(streams)} of {senders} senders connected") from None
            tcp_options.tune(conn, config.tcp_cc)
            st = FrameStream(conn, "sender", config.peer_timeout, counters)
            hdr, _ = st.read_frame()
            st.peer_name = f"sender rank {hdr.worker_rank}"
            streams[hdr.worker_rank] = st
        for r in range(rounds):
            before = counters.snapshot()
            t0 = None
            for rank, st in sorted(streams.items()):
                buf, _ = read_layers(st, plan, config.job_id, rank, r)
                t0 = t0 or time.monotonic()
            for st in streams.values():   # round acknowledgement: a header-only STOP frame
                st.write(wire.pack_header(wire.KIND_STOP, 0, config.job_id, wire.PS_RANK,
                                          wire.ALL_LAYERS, r))
            delta = counters.since(before)
            log.write("round", round=r, seconds=None, delivered=[1.0] * plan.num_layers,
                      closed_by=["complete"], bytes=delta.get("bytes_received", 0),
                      payload_bytes=4 * sum(plan.layer_sizes) * senders, retx_received=0,
                      drops={})
    finally:
        for st in streams.values():
            st.sock.close()
        lsock.close()


def send_rounds(config: TransportConfig, plan: ChunkPlan, rank: int, rounds: int,
                to: tuple[str, int], bind: tuple[str, int], seed: int, log: JsonLog) -> None:
    """Send `rounds` rounds of random layers to the receiver at `to`, logging each round."""
    if config.kind == "tcp":
        _send_tcp(config, plan, rank, rounds, to, seed, log)
        return
    ep = Endpoint(bind, config.job_id, rank, plain=config.plain, mac_key=config.mac_key,
                                 mac_mode=config.mac_mode, io=config.io)
    mux = Mux(ep)
    try:
        for r in range(rounds):
            before = ep.counters.snapshot()
            sender = SendSession(ep, to, wire.PS_RANK, plan, random_layers(plan, seed + r), r,
                                 pull=False, options=config.send,
                                 critical_layers=config.bounds.critical_layers(pull=False),
                                 budget=LossBudget.of(config.bounds.push, plan,
                                                      config.bounds.scope), core=config.core)
            mux.add(sender)
            mux.run(lambda: sender.done)
            mux.prune(r)
            delta = ep.counters.since(before)
            log.write("round", round=r, seconds=round(sender.stats.seconds, 6),
                      bytes=delta.get("bytes_sent", 0), data_packets=sender.stats.data_packets,
                      retransmissions=sender.stats.retransmissions,
                      resends=sender.stats.retransmissions, probes=sender.stats.probes,
                      closed_by=sender.stats.closed_by, **sender.window_summary())
    finally:
        ep.close()


def _send_tcp(config, plan, rank, rounds, to, seed, log) -> None:
    counters = Counters()
    tcp_options.check_ecn(config.tcp_ecn)
    deadline = time.monotonic() + config.join_timeout
    while True:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.settimeout(config.peer_timeout)
        try:
            tcp_options.tune(sock, config.tcp_cc)
            sock.connect(to)
            break
        except OSError as exc:
            sock.close()
            if time.monotonic() > deadline:
                raise PeerTimeout(f"receiver {to[0]}:{to[1]} refused TCP ({exc.strerror})") from None
            time.sleep(0.1)
        except ConfigError:
            sock.close()
            raise
    tcp_options.pace(sock, config.send.pace_pps)
    log.write("connected", **tcp_options.describe(sock))
    st = FrameStream(sock, "receiver", config.peer_timeout, counters)
    try:
        st.write(wire.pack_header(wire.KIND_PULL_REQ, 0, config.job_id, rank, wire.ALL_LAYERS, 0))
        retx_before = st.retransmissions()
        for r in range(rounds):
            t0 = time.monotonic()
            before = counters.snapshot()
            st.write(encode_layers(plan, random_layers(plan, seed + r), config.job_id, rank, r, 0))
            hdr, _ = st.read_frame()
            if hdr.kind != wire.KIND_STOP or hdr.round != r:
                raise PeerTimeout(f"receiver answered round {r} with {hdr}")
            delta = counters.since(before)
            total_retx = st.retransmissions()       # kernel TCP segments, cumulative
            log.write("round", round=r, seconds=round(time.monotonic() - t0, 6),
                      bytes=delta.get("bytes_sent", 0), data_packets=plan.total_chunks,
                      retransmissions=total_retx - retx_before, probes=0)
            retx_before = total_retx
    finally:
        sock.close()


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m hosts.tensor_exchange",
                                 description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    recv = sub.add_parser("recv", help="receive rounds from N senders")
    recv.add_argument("--bind", default="0.0.0.0")
    recv.add_argument("--port", type=int, default=wire.GRADLANE_UDP_PORT)
    recv.add_argument("--senders", type=int, default=1)
    send = sub.add_parser("send", help="send rounds to a receiver")
    send.add_argument("--to", required=True, help="receiver HOST:PORT")
    send.add_argument("--rank", type=int, default=0)
    send.add_argument("--bind", default="0.0.0.0")
    send.add_argument("--port", type=int, default=0, help="local UDP port (0 = any)")
    for p in (recv, send):
        p.add_argument("--layers", default="4160,650", help="comma-separated layer sizes (floats)")
        p.add_argument("--rounds", type=int, default=10)
        p.add_argument("--seed", type=int, default=1)
        p.add_argument("--log", help="JSON-lines log file (default stdout)")
        p.add_argument("--pid-file", help="write this process's PID here")
        add_transport_arguments(p)
    return ap


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)

    def body() -> None:
        check_port(args.port, "--port")
        try:
            sizes = [int(x) for x in args.layers.split(",") if x.strip()]
        except ValueError:
            raise ConfigError(f"--layers {args.layers!r} is not a comma-separated list of sizes") from None
        if args.rounds < 1:
            raise ConfigError("--rounds must be at least 1")
        if not sizes:
            raise ConfigError("--layers names no layer")
        if args.job_key is None:
            # each process would draw its own key: the two sides share none to sign with
            if args.packet_mac not in (None, "off"):
                raise ConfigError("--packet-mac needs --job-key FILE, the key sender and "
                                  "receiver share")
            args.packet_mac = "off"
        config, plan = with_chunk_plan(config_from_args(args, len(sizes), args.seed), sizes)
        log = JsonLog(args.log, role=f"tensor-{args.cmd}", transport=config.kind)
        log.write("bounds", scope=config.bounds.scope, notes=sub_chunk_notes(config.bounds, plan))
        try:
            if args.cmd == "recv":
                if args.senders < 1:
                    raise ConfigError("--senders must be at least 1")
                receive_rounds(config, plan, args.senders, args.rounds, (args.bind, args.port), log)
            else:
                send_rounds(config, plan, args.rank, args.rounds, parse_hostport(args.to, "--to"),
                            (args.bind, args.port), args.seed * 7919 + args.rank, log)
        finally:
            log.close()

    return run_agent(body, args.pid_file, "hosts.tensor_exchange")


if __name__ == "__main__":
    sys.exit(main())
