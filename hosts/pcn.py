"""PCN (Sensors 2021): before a push burst a worker sends PCN-START toward the PS so switches on
the path lower their ECN threshold; the PS answers PCN-ACK; the worker bursts after the ACK.

Both packets are gradient-header control packets (kinds PCN_START / PCN_ACK) whose IPv4 TOS
carries the PCN bits (bit 7 START, bit 6 ACK, bits 5..2 threshold/5, bits 1..0 ECN).

Run: python -m hosts.pcn serve --port 19527          (answer PCN-START)
     python -m hosts.pcn start --ps 10.0.0.1 [--count N --interval-ms M]  (handshake, log RTT)
"""
from __future__ import annotations

import argparse
import sys
import time

from hosts import wire
from hosts.cli import check_port, resolve_ipv4, run_agent
from hosts.errors import ConfigError
from hosts.jsonlog import JsonLog
from hosts.transport.endpoint import Endpoint, Received
from hosts.transport.mux import Mux

_PCN_TRIES = 4


def answer_start(endpoint: Endpoint, pkt: Received) -> None:
    """PS side: answer a PCN-START with a PCN-ACK (ACK bit in the TOS) to its sender."""
    endpoint.counters["pcn_starts"] += 1
    endpoint.send_control(wire.KIND_PCN_ACK, pkt.addr, pkt.header.round,
                          tos=wire.pcn_tos(ack=True))


class PcnClient:
    """Worker side: one START/ACK handshake per push burst over the worker's own mux."""

    def __init__(self, mux: Mux, ps: tuple[str, int], threshold: int, timeout: float) -> None:
        self.mux = mux
        self.ps = ps
        self.start_tos = wire.pcn_tos(start=True, threshold=threshold)
        self.timeout = timeout
        self._acked: set[int] = set()
        self._waiting: int | None = None
        mux.handlers[wire.KIND_PCN_ACK] = self._on_ack

    def _on_ack(self, pkt: Received, now: float) -> bool:
        if pkt.header.round == self._waiting:
            self._acked.add(pkt.header.round)
        else:
            self.mux.endpoint.counters["pcn_late_acks"] += 1
        return True

    def handshake(self, round_: int) -> float | None:
        """Send PCN-START for `round_` and wait for its ACK; ms until the ACK, None on timeout."""
        t0 = time.monotonic()
        give_up = t0 + self.timeout
        self._waiting = round_
        try:
            while round_ not in self._acked:
                now = time.monotonic()
                if now >= give_up:
                    self.mux.endpoint.counters["pcn_timeouts"] += 1
                    return None
                # a lost START is sent again: up to _PCN_TRIES times within the timeout
                self.mux.endpoint.send_control(wire.KIND_PCN_START, self.ps, round_,
                                               tos=self.start_tos)
                resend_at = min(give_up, now + self.timeout / _PCN_TRIES)
                self.mux.run(lambda: round_ in self._acked or time.monotonic() >= resend_at)
        finally:
            self._acked.discard(round_)
            self._waiting = None
        return (time.monotonic() - t0) * 1000.0


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m hosts.pcn", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    serve = sub.add_parser("serve", help="answer PCN-START with PCN-ACK (PS side)")
    serve.add_argument("--bind", default="0.0.0.0")
    serve.add_argument("--port", type=int, default=wire.GRADLANE_UDP_PORT)
    start = sub.add_parser("start", help="send PCN-START and wait for PCN-ACK (worker side)")
    start.add_argument("--ps", required=True, help="PS IPv4 address")
    start.add_argument("--ps-port", type=int, default=wire.GRADLANE_UDP_PORT)
    start.add_argument("--bind", default="0.0.0.0")
    start.add_argument("--port", type=int, default=0, help="local UDP port (0 = any)")
    start.add_argument("--threshold", type=int, default=10, help="requested ECN threshold (packets)")
    start.add_argument("--timeout-ms", type=float, default=50.0)
    start.add_argument("--count", type=int, default=1, help="handshakes to run")
    start.add_argument("--interval-ms", type=float, default=1000.0, help="gap between handshakes")
    for p in (serve, start):
        p.add_argument("--job", type=int, default=1)
        p.add_argument("--log", help="JSON-lines log file (default stdout)")
        p.add_argument("--pid-file", help="write this process's PID here")
    return ap


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)

    def body() -> None:
        log = JsonLog(args.log, role=f"pcn-{args.cmd}")
        if args.cmd == "serve":
            endpoint = Endpoint((args.bind, args.port), args.job, wire.PS_RANK)
            mux = Mux(endpoint)
            mux.handlers[wire.KIND_PCN_START] = lambda pkt, now: (answer_start(endpoint, pkt), True)[1]
            log.write("listening", port=endpoint.address[1])
            mux.run(lambda: False)
            return
        try:
            threshold_tos = wire.pcn_tos(start=True, threshold=args.threshold)
        except ValueError as exc:
            raise ConfigError(f"--threshold: {exc}") from None
        endpoint = Endpoint((args.bind, args.port), args.job, 0)
        ps = (resolve_ipv4(args.ps, "--ps"), check_port(args.ps_port, "--ps-port"))
        client = PcnClient(Mux(endpoint), ps, args.threshold,
                           args.timeout_ms / 1000.0)
        for i in range(args.count):
            rtt = client.handshake(i)
            log.write("pcn", round=i, acked=rtt is not None, rtt_ms=rtt, tos=threshold_tos)
            if i + 1 < args.count:
                time.sleep(args.interval_ms / 1000.0)

    return run_agent(body, args.pid_file, "hosts.pcn")


if __name__ == "__main__":
    sys.exit(main())
