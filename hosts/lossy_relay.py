"""A user-space UDP relay that drops a chosen fraction of datagrams (no netem on this kernel),
optionally with scheduled bursts of heavy loss (the switch's `START+DURATION@LOSS` syntax).

Clients send to the relay's listen address; each client gets its own upstream socket toward the
target, so the target sees distinct sources and its replies go back to the right client.
Run: python -m hosts.lossy_relay --listen 127.0.0.1:19600 --target 127.0.0.1:19527 --loss 0.05
       [--burst 5s+100ms@0.8 --burst 10s+100ms@0.8]
"""
from __future__ import annotations

import argparse
import json
import select
import socket
import sys
import threading
import time
from typing import Callable

from hosts import wire
from hosts.cli import parse_hostport, run_agent
from hosts.errors import ConfigError
from hosts.loss_model import BURST_SYNTAX, LossBurst, LossModel, parse_burst
from hosts.transport.counters import Counters

_BUF = 65535


class LossyRelay:
    """Forwards UDP both ways between clients and `target`, dropping each datagram with
    probability `loss` (at least a burst's loss during one of `bursts`, timed from the relay's
    creation; only DATA datagrams when `data_only`)
    and always when `blackhole(data)`. Deterministic for a seed and a given packet order.
    Use as a context manager or start()/stop()."""

    def __init__(self, listen: tuple[str, int], target: tuple[str, int], loss: float,
                 seed: int = 0, data_only: bool = False,
                 blackhole: "Callable[[bytes], bool] | None" = None,
                 bursts: "tuple[LossBurst, ...]" = ()) -> None:
        self.model = LossModel(loss, seed, bursts)
        self.target = target
        self.data_only = data_only
        self.blackhole = blackhole
        self.counters = Counters()
        self._began = time.monotonic()
        self._front = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._front.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        try:
            self._front.bind(listen)
        except OSError as exc:
            self._front.close()
            raise ConfigError(f"cannot bind relay to {listen[0]}:{listen[1]}: {exc.strerror}") from None
        self._upstream: dict[tuple[str, int], socket.socket] = {}
        self._client_of: dict[socket.socket, tuple[str, int]] = {}
        self._stop_r, self._stop_w = socket.socketpair()
        self._thread: threading.Thread | None = None

    @property
    def address(self) -> tuple[str, int]:
        return self._front.getsockname()

    def _drop(self, data: bytes) -> bool:
        if self.blackhole is not None and self.blackhole(data):
            return True
        if self.data_only and (len(data) < wire.HEADER_LEN or data[0] & 0xF != wire.KIND_DATA):
            return False
        elapsed = time.monotonic() - self._began
        if self.model.drop(elapsed):
            if self.model.in_burst(elapsed):
                self.counters["dropped_in_burst"] += 1
            return True
        return False

    def _forward(self, data: bytes, sock: socket.socket, addr: tuple[str, int], way: str) -> None:
        if self._drop(data):
            self.counters[f"dropped_{way}"] += 1
            return
        try:
            sock.sendto(data, addr)
            self.counters[f"forwarded_{way}"] += 1
        except OSError:
            self.counters[f"send_error_{way}"] += 1

    def serve(self) -> None:
        """Relay until stop() (or until the stop socket is written)."""
        while True:
            socks = [self._front, self._stop_r, *self._client_of]
            ready, _, _ = select.select(socks, [], [])
            if self._stop_r in ready:
                return
            for sock in ready:
                try:
                    data, addr = sock.recvfrom(_BUF)
                except OSError:
                    continue
                if sock is self._front:
                    up = self._upstream.get(addr)
                    if up is None:
                        up = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                        up.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
                        up.bind((self._front.getsockname()[0], 0))
                        self._upstream[addr] = up
                        self._client_of[up] = addr
                    self._forward(data, up, self.target, "up")
                else:
                    self._forward(data, self._front, self._client_of[sock], "down")

    def start(self) -> "LossyRelay":
        self._began = time.monotonic()
        self._thread = threading.Thread(target=self.serve, name="lossy-relay", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop_w.send(b"x")
        if self._thread is not None:
            self._thread.join(timeout=5)
        for sock in [self._front, self._stop_r, self._stop_w, *self._client_of]:
            sock.close()

    def __enter__(self) -> "LossyRelay":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m hosts.lossy_relay", description=__doc__.splitlines()[0])
    ap.add_argument("--listen", required=True, help="HOST:PORT the relay listens on")
    ap.add_argument("--target", required=True, help="HOST:PORT it forwards to")
    ap.add_argument("--loss", type=float, default=0.0, help="drop probability per datagram")
    ap.add_argument("--data-only", action="store_true", help="drop only gradient DATA datagrams")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--burst", action="append", default=[], metavar=BURST_SYNTAX,
                    help="a loss burst counted from relay start, e.g. 5s+100ms@0.8 (repeatable)")
    ap.add_argument("--pid-file", help="write this process's PID here")
    return ap


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)

    def body() -> None:
        bursts = tuple(parse_burst(text) for text in args.burst)
        relay = LossyRelay(parse_hostport(args.listen, "--listen"),
                           parse_hostport(args.target, "--target"), args.loss, args.seed,
                           args.data_only, bursts=bursts)
        try:
            relay.serve()
        finally:
            print(json.dumps({"event": "relay_summary", **relay.counters.snapshot()}), flush=True)

    return run_agent(body, args.pid_file)


if __name__ == "__main__":
    sys.exit(main())
