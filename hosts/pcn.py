"""PCN (Sensors 2021): before a push burst a worker sends PCN-START toward the PS so switches on
the path lower their ECN threshold; the PS answers PCN-ACK; the worker bursts after the ACK.

Both packets are gradient-header control packets (kinds PCN_START / PCN_ACK) whose IPv4 TOS
carries the PCN bits (bit 7 START, bit 6 ACK, bits 5..2 threshold/5, bits 1..0 ECN).

`bursts` is the PCN paper's DDL traffic for experiments: periodic push bursts of `--bytes`
each over a reliable ECN-reactive transport (hosts/ddl_bursts.py: kernel TCP, or gradlane's
UDP sender), each announced `--lead-ms` before it is ready by a PCN-START (with `--pcn`;
without it the same timeline, no START), timed until every byte is acknowledged. `serve`
answers PCN-START; with `--tcp-port` it drains the workers' TCP bursts, with
`--gradlane-bytes` it receives gradlane-transport bursts, and with `--record-bursts` it logs,
per (worker, round) of gradient DATA, the arrivals and the telemetry they carry.

Run: python -m hosts.pcn serve --port 19527 [--record-bursts] [--tcp-port 5002]
            [--gradlane-bytes B --ranks 2]
     python -m hosts.pcn start --ps 10.0.0.1 [--count N --interval-ms M]  (handshake, log RTT)
     python -m hosts.pcn bursts --ps 10.0.0.1 --transport tcp|gradlane --bytes 368000
            --bursts 6 --period-s 7.5 [--pcn --lead-ms 1000 --start-at UNIX_TIME --rank R]
"""
from __future__ import annotations

import argparse
import sys
import threading
import time

from hosts import wire
from hosts.background import choose_congestion_control, connect, enable_ecn
from hosts.cli import check_port, die_with_parent, resolve_ipv4, run_agent
from hosts.ddl_bursts import (TRANSPORTS, BurstReceivers, BurstTransport, GradlaneBurstSender,
                              TcpBurstSender, run_bursts, tcp_sink)
from hosts.errors import ConfigError
from hosts.jsonlog import JsonLog
from hosts.transport.endpoint import Endpoint
from hosts.transport.mux import Mux
from hosts.transport.port import Received

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


class BurstRecorder:
    """PS side: per (worker, round) of DATA, the arrival times and the telemetry of its packets;
    a burst is logged once nothing of it arrived for `idle` seconds."""

    def __init__(self, log: JsonLog, idle: float) -> None:
        self.log = log
        self.idle = idle
        self._open: dict[tuple[int, int], dict] = {}

    def on_data(self, pkt: Received, now: float) -> bool:
        h = pkt.header
        wall = time.time()
        key = (h.worker_rank, h.round)
        row = self._open.get(key)
        if row is None:
            row = self._open[key] = {
                "rank": h.worker_rank, "round": h.round, "packets": 0, "bytes": 0,
                "first_t": wall, "start_qdepth": h.tele_max_qdepth, "max_qdepth": 0,
                "qdelay_us_sum": 0, "qdelay_us_max": 0, "hops": h.tele_hops, "qdepths": []}
        row["packets"] += 1
        row["bytes"] += wire.HEADER_LEN + len(pkt.payload)
        row["last_t"] = wall
        row["last_mono"] = now
        row["max_qdepth"] = max(row["max_qdepth"], h.tele_max_qdepth)
        row["qdelay_us_sum"] += h.tele_qdelay_us
        row["qdelay_us_max"] = max(row["qdelay_us_max"], h.tele_qdelay_us)
        row["qdepths"].append(h.tele_max_qdepth)
        return True

    def flush(self, now: float, force: bool = False) -> None:
        """Log (and forget) every burst idle for `idle` seconds (all of them with `force`)."""
        for key in [k for k, r in self._open.items() if force or now - r["last_mono"] >= self.idle]:
            row = self._open.pop(key)
            del row["last_mono"]
            row["qdelay_us_mean"] = row.pop("qdelay_us_sum") / row["packets"]
            self.log.write("burst_received", **row)


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m hosts.pcn", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    serve = sub.add_parser("serve", help="answer PCN-START with PCN-ACK (PS side)")
    serve.add_argument("--bind", default="0.0.0.0")
    serve.add_argument("--port", type=int, default=wire.GRADLANE_UDP_PORT)
    serve.add_argument("--record-bursts", action="store_true",
                       help="log each (worker, round) burst of DATA with its telemetry")
    serve.add_argument("--burst-idle-s", type=float, default=1.0,
                       help="a burst is complete after this long without its packets")
    serve.add_argument("--tcp-port", type=int, default=0,
                       help="also drain DDL bursts over TCP on this port (0 = no)")
    serve.add_argument("--gradlane-bytes", type=int, default=0,
                       help="also receive gradlane-transport bursts of this many bytes (0 = no)")
    serve.add_argument("--ranks", type=int, default=1,
                       help="with --gradlane-bytes: workers 0..N-1 burst every round")
    start = sub.add_parser("start", help="send PCN-START and wait for PCN-ACK (worker side)")
    start.add_argument("--ps", required=True, help="PS IPv4 address")
    start.add_argument("--ps-port", type=int, default=wire.GRADLANE_UDP_PORT)
    start.add_argument("--bind", default="0.0.0.0")
    start.add_argument("--port", type=int, default=0, help="local UDP port (0 = any)")
    start.add_argument("--threshold", type=int, default=10, help="requested ECN threshold (packets)")
    start.add_argument("--timeout-ms", type=float, default=50.0)
    start.add_argument("--count", type=int, default=1, help="handshakes to run")
    start.add_argument("--interval-ms", type=float, default=1000.0, help="gap between handshakes")
    bursts = sub.add_parser("bursts", help="periodic DDL push bursts, optionally announced by PCN")
    bursts.add_argument("--ps", required=True, help="PS IPv4 address")
    bursts.add_argument("--ps-port", type=int, default=wire.GRADLANE_UDP_PORT)
    bursts.add_argument("--bind", default="0.0.0.0")
    bursts.add_argument("--port", type=int, default=wire.GRADLANE_UDP_PORT, help="local UDP port")
    bursts.add_argument("--rank", type=int, default=0, help="worker_rank in the header")
    bursts.add_argument("--transport", default="tcp", choices=TRANSPORTS,
                        help="tcp: one kernel TCP connection with ECN; gradlane: our UDP sender")
    bursts.add_argument("--bytes", type=int, default=368_000, help="bytes per burst")
    bursts.add_argument("--bursts", type=int, default=6)
    bursts.add_argument("--period-s", type=float, default=7.5, help="from one burst's ready time to the next's")
    bursts.add_argument("--burst-timeout-s", type=float, default=30.0,
                        help="a burst not acknowledged by then ends the run with an error")
    bursts.add_argument("--lead-ms", type=float, default=0.0,
                        help="PCN-START this long before a burst is ready (same timeline without --pcn)")
    bursts.add_argument("--start-at", type=float, help="unix time the first burst is ready (default now + lead)")
    bursts.add_argument("--first-round", type=int, default=1)
    bursts.add_argument("--pcn", action="store_true", help="announce each burst with PCN-START")
    bursts.add_argument("--threshold", type=int, default=10, help="requested ECN threshold (packets)")
    bursts.add_argument("--timeout-ms", type=float, default=500.0, help="wait for PCN-ACK")
    bursts.add_argument("--tcp-port", type=int, default=5002, help="tcp: the PS's DDL port")
    bursts.add_argument("--tcp-cc", default="cubic", help="tcp: congestion control (ECN on)")
    bursts.add_argument("--window", type=int, default=10, help="gradlane: initial window, packets")
    bursts.add_argument("--cc", default="ecn", help="gradlane: window rule, ecn or reno")
    bursts.add_argument("--cc-delay-ms", type=float, default=20.0,
                        help="gradlane --cc ecn: an ACK echoing a longer queueing delay counts as marked")
    for p in (serve, start, bursts):
        p.add_argument("--job", type=int, default=1)
        p.add_argument("--log", help="JSON-lines log file (default stdout)")
        p.add_argument("--pid-file", help="write this process's PID here")
        p.add_argument("--die-with-parent", action="store_true", help="exit when the parent dies")
    return ap


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.die_with_parent:
        die_with_parent()

    def body() -> None:
        log = JsonLog(args.log, role=f"pcn-{args.cmd}")
        if args.cmd == "serve":
            _check_serve(args)
            endpoint = Endpoint((args.bind, args.port), args.job, wire.PS_RANK)
            mux = Mux(endpoint)
            mux.handlers[wire.KIND_PCN_START] = lambda pkt, now: (answer_start(endpoint, pkt), True)[1]
            recorder = BurstRecorder(log, args.burst_idle_s) if args.record_bursts else None
            receivers = (BurstReceivers(mux, args.gradlane_bytes, list(range(args.ranks)))
                         if args.gradlane_bytes else None)

            def on_data(pkt: Received, now: float) -> bool:
                if recorder is not None:
                    recorder.on_data(pkt, now)
                if receivers is not None:
                    receivers.on_data(pkt, now)
                return receivers is None   # consumed unless a receiver session takes it

            if recorder is not None or receivers is not None:
                mux.handlers[wire.KIND_DATA] = on_data
            stop = threading.Event()
            if args.tcp_port:
                tcp_sink((args.bind, args.tcp_port), log, stop)
            log.write("listening", port=endpoint.address[1], tcp_port=args.tcp_port or None)

            def never_done() -> bool:
                if recorder is not None:
                    recorder.flush(time.monotonic())
                return False

            try:
                mux.run(never_done)
            finally:
                stop.set()
                if recorder is not None:
                    recorder.flush(time.monotonic(), force=True)
            return
        if args.cmd == "bursts":
            _check_bursts(args)
            transport = BurstTransport(args.transport, args.tcp_cc, args.window, args.cc,
                                       args.cc_delay_ms)
            transport.check()
            endpoint = Endpoint((args.bind, args.port), args.job, args.rank)
            ps_ip = resolve_ipv4(args.ps, "--ps")
            ps = (ps_ip, check_port(args.ps_port, "--ps-port"))
            mux = Mux(endpoint)
            client = PcnClient(mux, ps, args.threshold, args.timeout_ms / 1000.0) if args.pcn else None
            timeout = args.burst_timeout_s
            if transport.kind == "tcp":
                enable_ecn(log)
                cc = choose_congestion_control(transport.tcp_cc, log)
                sender = TcpBurstSender(connect((ps_ip, check_port(args.tcp_port, "--tcp-port")), cc, 10.0))
                log.write("connected", transport="tcp", cc=cc)

                def send(round_: int) -> dict:
                    return sender.send(args.bytes, timeout)
            else:
                gradlane = GradlaneBurstSender(mux, ps, transport)

                def send(round_: int) -> dict:
                    return gradlane.send(args.bytes, round_, timeout)
            lead = args.lead_ms / 1000.0
            start_at = args.start_at if args.start_at is not None else time.time() + lead
            run_bursts(send, client.handshake if client is not None else None, log, args.rank,
                       args.bursts, args.bytes, args.period_s, lead, start_at, args.first_round)
            log.write("done", counters=dict(endpoint.counters))
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


def _check_serve(args: argparse.Namespace) -> None:
    for name in ("tcp_port", "gradlane_bytes"):
        if getattr(args, name) < 0:
            raise ConfigError(f"--{name.replace('_', '-')} must be >= 0")
    if args.tcp_port:
        check_port(args.tcp_port, "--tcp-port")
    if not 1 <= args.ranks < wire.PS_RANK:
        raise ConfigError(f"--ranks {args.ranks} is outside 1..{wire.PS_RANK - 1}")


def _check_bursts(args: argparse.Namespace) -> None:
    for name in ("bursts", "bytes"):
        if getattr(args, name) <= 0:
            raise ConfigError(f"--{name} must be positive")
    for name in ("period_s", "burst_timeout_s"):
        if not 0 < getattr(args, name) < float("inf"):
            raise ConfigError(f"--{name.replace('_', '-')} must be a positive finite number")
    for name in ("lead_ms", "timeout_ms"):
        if not 0 <= getattr(args, name) < float("inf"):
            raise ConfigError(f"--{name.replace('_', '-')} must be a finite number >= 0")
    if not 0 <= args.rank < wire.PS_RANK:
        raise ConfigError(f"--rank {args.rank} is outside 0..{wire.PS_RANK - 1}")
    try:
        wire.pcn_tos(start=True, threshold=args.threshold)
    except ValueError as exc:
        raise ConfigError(f"--threshold: {exc}") from None


if __name__ == "__main__":
    sys.exit(main())
