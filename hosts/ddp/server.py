"""The parameter server of a DDP job over gradlane: every step, each rank's gradients arrive
over the transport, are averaged per element (push holes filled per --hole-fill) and go back.

Start-up: every rank's hook connects to the control port and registers the model's layout
(parameter names and sizes); once all --ranks did, with the same layout, the exchange opens and
each is told its port. Then rounds run until every rank said goodbye (exit 0). A rank that
leaves without it, or registers a different layout, ends the job: the others are told why, and
the server exits with a one-line error (status 2).
Logs JSON lines: `start` (layout, bounds, transport), `round` (push delivered fractions per
layer, mean over ranks; push and pull seconds), `done`.
Run: python -m hosts.ddp.server --ranks N --job-key FILE [--port 19527] [--control-port 19528]
"""
from __future__ import annotations

import argparse
import queue
import select
import socket
import sys
import threading
import time

import numpy as np

from hosts import wire
from hosts.cli import agent_main, check_port
from hosts.ddp import control
from hosts.ddp.flags import add_ddp_transport_arguments, transport_config
from hosts.ddp.layout import Layout
from hosts.errors import ConfigError, HostsError
from hosts.exchange import job_key
from hosts.exchange.factory import server_exchange
from hosts.jsonlog import JsonLog
from hosts.training.aggregate import PushAggregator
from hosts.transport.chunking import ChunkPlan

DEFAULT_CONTROL_PORT = wire.GRADLANE_UDP_PORT + 1


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m hosts.ddp.server",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, required=True, help="DDP world size")
    ap.add_argument("--bind", default="127.0.0.1", help="address to listen on (default loopback)")
    ap.add_argument("--port", type=int, default=wire.GRADLANE_UDP_PORT,
                    help="the exchange's port (UDP; TCP for --transport tcp), default 19527")
    ap.add_argument("--control-port", type=int, default=DEFAULT_CONTROL_PORT,
                    help=f"TCP port the ranks register at (default {DEFAULT_CONTROL_PORT})")
    ap.add_argument("--register-timeout", type=float, default=300.0,
                    help="seconds to wait for every rank to register (default 300: a rank "
                         "imports torch and starts its process group first)")
    ap.add_argument("--log", help="JSON-lines log file (default stdout)")
    ap.add_argument("--pid-file", help="write this process's PID here")
    ap.add_argument("--die-with-parent", action="store_true", help="exit when the parent dies")
    add_ddp_transport_arguments(ap)
    return ap


class _Rank:
    def __init__(self, sock: socket.socket, reader: control.Reader, rank: int) -> None:
        self.sock, self.reader, self.rank = sock, reader, rank
        self.said_bye = False


def _register(listener: socket.socket, ranks: int, timeout: float) -> tuple[dict[int, _Rank], Layout]:
    """Accept every rank's registration; the layout they all gave. ConfigError (after telling
    every registered rank why) on a bad registration or when not all ranks came in time."""
    joined: dict[int, _Rank] = {}
    layout: Layout | None = None
    first = -1
    give_up = time.monotonic() + timeout

    def fail(message: str) -> None:
        for r in joined.values():
            control.send(r.sock, {"type": "abort", "message": message})
        raise ConfigError(message)

    while len(joined) < ranks:
        left = give_up - time.monotonic()
        if left <= 0:
            missing = sorted(set(range(ranks)) - set(joined))
            fail(f"ranks {missing} did not register within --register-timeout {timeout:g} s")
        listener.settimeout(left)
        try:
            sock, _ = listener.accept()
        except socket.timeout:
            continue
        sock.settimeout(timeout)
        reader = control.Reader(sock)
        try:
            message = reader.next()
        except (ConfigError, socket.timeout) as exc:
            sock.close()
            fail(f"a bad registration on the control port: {exc or 'timed out'}")
        if message is None or message.get("type") != "register":
            sock.close()
            continue   # a probe or a stray connection: not a rank
        rank, world = message.get("rank"), message.get("world")
        try:
            mine = Layout.from_json(message.get("layout"))
        except ConfigError as exc:
            control.send(sock, {"type": "abort", "message": str(exc)})
            fail(f"rank {rank} registered a bad layout: {exc}")
        if world != ranks or not isinstance(rank, int) or not 0 <= rank < ranks or rank in joined:
            why = (f"rank {rank} of world size {world} registered with a server of --ranks "
                   f"{ranks}" + (" twice" if rank in joined else ""))
            control.send(sock, {"type": "abort", "message": why})
            fail(why)
        joined[rank] = _Rank(sock, reader, rank)
        if layout is None:
            layout, first = mine, rank
        elif (diff := layout.difference(mine)) is not None:
            fail(f"rank {rank}'s model differs from rank {first}'s: {diff}")
    assert layout is not None
    return joined, layout


def serve(args: argparse.Namespace) -> None:
    if args.ranks < 1:
        raise ConfigError(f"--ranks {args.ranks} must be at least 1")
    check_port(args.port, "--port")
    check_port(args.control_port, "--control-port")
    if not args.register_timeout > 0:
        raise ConfigError(f"--register-timeout {args.register_timeout} must be positive")
    job_key.require_flag(args.job_key)
    log = JsonLog(args.log, role="ddp-ps")
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((args.bind, args.control_port))
    except OSError as exc:
        raise ConfigError(f"cannot bind TCP {args.bind}:{args.control_port}: {exc.strerror}") from None
    listener.listen(args.ranks + 4)
    log.write("listening", control_port=listener.getsockname()[1], ranks=args.ranks)
    exchange = None
    try:
        ranks, layout = _register(listener, args.ranks, args.register_timeout)
        config = transport_config(args, layout, args.seed, create_key=True)
        plan = ChunkPlan(list(layout.sizes), config.chunk_elems)
        exchange = server_exchange(config, plan, args.ranks, (args.bind, args.port))
        endpoint = getattr(exchange, "endpoint", None)
        port = endpoint.address[1] if config.udp and endpoint is not None else args.port
        log.write("start", ranks=args.ranks, layout=layout.as_json(), port=port,
                  push_bounds=list(config.bounds.push), pull_bounds=list(config.bounds.pull),
                  config=config.summary())
        for r in ranks.values():
            control.send(r.sock, {"type": "ready", "port": port})
        _run(exchange, config, ranks, log)
    finally:
        if exchange is not None:
            exchange.close()
        listener.close()
        log.close()


def _run(exchange, config, ranks: dict[int, _Rank], log: JsonLog) -> None:  # noqa: ANN001
    """Rounds in a thread; here, the ranks' control connections. Returns when every rank said
    goodbye; ConfigError when one left without it or the rounds failed."""
    events: queue.Queue = queue.Queue()
    required = tuple(1.0 - b for b in config.bounds.push)
    aggregator = PushAggregator(config.hole_fill)
    progress = {"round": 0}

    def rounds() -> None:
        try:
            rnd = 0
            while True:
                gathered = exchange.gather(rnd, required)
                if gathered.values:
                    mean = aggregator.aggregate(gathered.values, gathered.delivered)
                else:
                    mean = [np.zeros(n, dtype=np.float32) for n in exchange.plan.layer_sizes]
                pull_s = exchange.scatter(rnd, mean, False, required)
                log.write("round", round=rnd, push_s=round(gathered.seconds, 6),
                          pull_s=round(pull_s, 6),
                          delivered=[round(f, 4) for f in gathered.mean_fractions()],
                          closed_by=sorted(set(str(c) for c in gathered.closed_by.values())),
                          lost=gathered.lost)
                rnd += 1
                progress["round"] = rnd
        except HostsError as exc:
            events.put(("error", str(exc)))
        except OSError as exc:   # the exchange's socket closed under it: the job is over
            events.put(("error", f"exchange: {exc}"))

    threading.Thread(target=rounds, name="ddp-rounds", daemon=True).start()
    open_ranks = dict(ranks)
    while open_ranks:
        try:
            kind, detail = events.get_nowait()
        except queue.Empty:
            kind = None
        if kind == "error":
            _abort(ranks, f"the parameter server failed: {detail}")
            raise ConfigError(f"round {progress['round']}: {detail}")
        readable, _, _ = select.select([r.sock for r in open_ranks.values()], [], [], 0.1)
        for sock in readable:
            r = next(x for x in open_ranks.values() if x.sock is sock)
            try:
                message = r.reader.next()
            except ConfigError:
                message = None
            if message is not None and message.get("type") == "bye":
                r.said_bye = True
                del open_ranks[r.rank]
            elif message is None:
                why = (f"rank {r.rank} left the job in round {progress['round']} (its control "
                       f"connection closed without a goodbye)")
                _abort(ranks, why)
                raise ConfigError(why)
    log.write("done", rounds=progress["round"], counters=exchange.counters.snapshot())


def _abort(ranks: dict[int, _Rank], message: str) -> None:
    for r in ranks.values():
        if not r.said_bye:
            control.send(r.sock, {"type": "abort", "message": message})
        r.sock.close()


def main(argv: list[str] | None = None) -> int:
    return agent_main(build_parser(), serve, "hosts.ddp.server", argv)


if __name__ == "__main__":
    sys.exit(main())
