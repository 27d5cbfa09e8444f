"""PCN (Sensors 2021): before a push burst a worker sends PCN-START toward the PS so switches on
the path lower their ECN threshold; the PS answers PCN-ACK; the worker bursts after the ACK.

Both packets are gradient-header control packets (kinds PCN_START / PCN_ACK) whose IPv4 TOS
carries the PCN bits (bit 7 START, bit 6 ACK, bits 5..2 threshold/5, bits 1..0 ECN).

`bursts` is the PCN paper's DDL traffic for experiments: periodic push bursts of MTU-sized
gradient DATA packets, each announced `--lead-ms` before it is ready by a PCN-START (with
`--pcn`; without it the same timeline, no START). `serve --record-bursts` logs, per (worker,
round), the arrivals of a burst and the telemetry its packets carry (queue met, queueing delay).

Run: python -m hosts.pcn serve --port 19527 [--record-bursts]   (answer PCN-START, log bursts)
     python -m hosts.pcn start --ps 10.0.0.1 [--count N --interval-ms M]  (handshake, log RTT)
     python -m hosts.pcn bursts --ps 10.0.0.1 --bursts 6 --packets 200 --rate 500 --gap-s 7
            [--pcn --lead-ms 1000 --start-at UNIX_TIME --rank R]
"""
from __future__ import annotations

import argparse
import sys
import time

from hosts import wire
from hosts.cli import check_port, die_with_parent, resolve_ipv4, run_agent
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


def send_bursts(endpoint: Endpoint, ps: tuple[str, int], client: PcnClient | None, log: JsonLog,
                bursts: int, packets: int, rate: float, gap: float, lead: float,
                start_at: float, first_round: int = 1) -> None:
    """Worker side: `bursts` bursts of `packets` MTU-sized DATA packets paced at `rate` pps, one
    every `gap` + burst length seconds from `start_at` (unix time). With `client`, PCN-START goes
    out `lead` seconds before each burst is ready and the burst leaves once ready and ACKed."""
    payload = b"\0" * wire.MAX_DATA_PAYLOAD
    floats = wire.MAX_DATA_PAYLOAD // 4
    tos = wire.data_tos(0, False)
    period = gap + packets / rate
    for i in range(bursts):
        round_ = first_round + i
        ready = start_at + i * period
        _sleep_until(ready - lead)
        rtt = client.handshake(round_) if client is not None else None
        _sleep_until(ready)
        t0 = time.time()
        for seq in range(packets):
            header = wire.pack_header(wire.KIND_DATA, 0, endpoint.job_id, endpoint.rank, 0, round_,
                                      0, len(payload), seq, seq * floats)
            endpoint.send(header + payload, ps, tos)
            _sleep_until(t0 + (seq + 1) / rate)
        log.write("burst_sent", round=round_, rank=endpoint.rank, packets=packets,
                  bytes=packets * (wire.HEADER_LEN + len(payload)), ready_t=ready, first_t=t0,
                  last_t=time.time(), pcn=client is not None, acked=rtt is not None, pcn_rtt_ms=rtt)


def _sleep_until(when: float) -> None:
    delay = when - time.time()
    if delay > 0:
        time.sleep(delay)


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
    bursts.add_argument("--bursts", type=int, default=6)
    bursts.add_argument("--packets", type=int, default=200, help="MTU-sized DATA packets per burst")
    bursts.add_argument("--rate", type=float, default=500.0, help="packets/s within a burst")
    bursts.add_argument("--gap-s", type=float, default=7.0, help="idle time between bursts")
    bursts.add_argument("--lead-ms", type=float, default=0.0,
                        help="PCN-START this long before a burst is ready (same timeline without --pcn)")
    bursts.add_argument("--start-at", type=float, help="unix time the first burst is ready (default now + lead)")
    bursts.add_argument("--first-round", type=int, default=1)
    bursts.add_argument("--pcn", action="store_true", help="announce each burst with PCN-START")
    bursts.add_argument("--threshold", type=int, default=10, help="requested ECN threshold (packets)")
    bursts.add_argument("--timeout-ms", type=float, default=500.0, help="wait for PCN-ACK")
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
            endpoint = Endpoint((args.bind, args.port), args.job, wire.PS_RANK)
            mux = Mux(endpoint)
            mux.handlers[wire.KIND_PCN_START] = lambda pkt, now: (answer_start(endpoint, pkt), True)[1]
            recorder = BurstRecorder(log, args.burst_idle_s) if args.record_bursts else None
            if recorder is not None:
                mux.handlers[wire.KIND_DATA] = recorder.on_data
            log.write("listening", port=endpoint.address[1])

            def never_done() -> bool:
                if recorder is not None:
                    recorder.flush(time.monotonic())
                return False

            try:
                mux.run(never_done)
            finally:
                if recorder is not None:
                    recorder.flush(time.monotonic(), force=True)
            return
        if args.cmd == "bursts":
            _check_bursts(args)
            endpoint = Endpoint((args.bind, args.port), args.job, args.rank)
            ps = (resolve_ipv4(args.ps, "--ps"), check_port(args.ps_port, "--ps-port"))
            client = (PcnClient(Mux(endpoint), ps, args.threshold, args.timeout_ms / 1000.0)
                      if args.pcn else None)
            lead = args.lead_ms / 1000.0
            start_at = args.start_at if args.start_at is not None else time.time() + lead
            send_bursts(endpoint, ps, client, log, args.bursts, args.packets, args.rate, args.gap_s,
                        lead, start_at, args.first_round)
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


def _check_bursts(args: argparse.Namespace) -> None:
    for name in ("bursts", "packets", "rate"):
        if getattr(args, name) <= 0:
            raise ConfigError(f"--{name} must be positive")
    for name in ("gap_s", "lead_ms", "timeout_ms"):
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
