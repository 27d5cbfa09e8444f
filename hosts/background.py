"""Background traffic for experiments: ECN-capable TCP flows (DCTCP when the kernel has it),
a TCP sink, a UDP microburst injector and an incast generator. Logs JSON lines.

Run: python -m hosts.background sink --port 5001 [--report-s 0.5]
     python -m hosts.background flows --dst IP --port 5001 --flows 3 --duration 10 [--cc dctcp]
     python -m hosts.background microburst --dst IP --port 5002 --burst 200 --interval-ms 500
     python -m hosts.background incast --dst IP --port 5001 --flows 8 --bytes 262144 --repeat 5
"""
from __future__ import annotations

import argparse
import socket
import sys
import threading
import time

from hosts.cli import agent_main, resolve_ipv4
from hosts.errors import ConfigError, PeerTimeout
from hosts.exchange.tcp_options import available_congestion_controls
from hosts.jsonlog import JsonLog

_CHUNK = 64 * 1024
_TCP_ECN_SYSCTL = "/proc/sys/net/ipv4/tcp_ecn"


def choose_congestion_control(wanted: str, log: JsonLog) -> str:
    """`wanted` if the kernel offers it, else cubic (logged), else the system default."""
    have = available_congestion_controls()
    if wanted in have:
        return wanted
    fallback = "cubic" if "cubic" in have else (have[0] if have else "")
    log.write("congestion_control_fallback", wanted=wanted, using=fallback, available=have)
    return fallback


def enable_ecn(log: JsonLog) -> None:
    """Ask for ECN on TCP in this network namespace (needs root; logged if not possible)."""
    try:
        with open(_TCP_ECN_SYSCTL, "w") as f:
            f.write("1\n")
        log.write("tcp_ecn", enabled=True)
    except OSError as exc:
        log.write("tcp_ecn", enabled=False, reason=exc.strerror)


def connect(dst: tuple[str, int], cc: str, timeout: float) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if cc:
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
        except OSError:
            pass
    sock.settimeout(timeout)
    try:
        sock.connect(dst)
    except OSError as exc:
        sock.close()
        raise PeerTimeout(f"cannot connect to {dst[0]}:{dst[1]}: {exc.strerror or exc}") from None
    return sock


def listen_tcp(bind: tuple[str, int]) -> socket.socket:
    """A listening TCP socket on `bind` (accept times out every 0.2 s); ConfigError if it
    cannot be bound."""
    lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        lsock.bind(bind)
    except OSError as exc:
        lsock.close()
        raise ConfigError(f"cannot bind {bind[0]}:{bind[1]}: {exc.strerror}") from None
    lsock.listen(128)
    lsock.settimeout(0.2)
    return lsock


def sink(bind: tuple[str, int], log: JsonLog, stop: threading.Event, report: float = 0.0) -> None:
    """Accept TCP connections and discard what they send; log bytes per connection, and with
    `report` > 0 the bytes received so far from each peer address every `report` seconds."""
    serve_sink(listen_tcp(bind), log, stop, report)


def serve_sink(lsock: socket.socket, log: JsonLog, stop: threading.Event, report: float = 0.0) -> None:
    """`sink` on a socket from `listen_tcp`, until `stop` is set; closes it at the end."""
    log.write("listening", port=lsock.getsockname()[1])

    received: dict[str, int] = {}
    count_lock = threading.Lock()

    def drain(conn: socket.socket, peer: tuple[str, int]) -> None:
        total, t0 = 0, time.monotonic()
        with conn:
            while True:
                try:
                    data = conn.recv(_CHUNK)
                except OSError:
                    break
                if not data:
                    break
                total += len(data)
                with count_lock:
                    received[peer[0]] = received.get(peer[0], 0) + len(data)
        log.write("flow_end", peer=f"{peer[0]}:{peer[1]}", bytes=total,
                  seconds=round(time.monotonic() - t0, 6))

    def progress() -> None:
        while not stop.wait(report):
            with count_lock:
                snapshot = dict(received)
            log.write("received", bytes_by_peer=snapshot)

    if report > 0:
        threading.Thread(target=progress, daemon=True).start()
    while not stop.is_set():
        try:
            conn, peer = lsock.accept()
        except socket.timeout:
            continue
        threading.Thread(target=drain, args=(conn, peer), daemon=True).start()
    lsock.close()


def flows(dst: tuple[str, int], count: int, duration: float, cc: str, log: JsonLog,
          timeout: float = 5.0) -> None:
    """`count` long-lived TCP flows sending as fast as the network allows for `duration` s
    (`timeout`: connecting, and how long one send may block before it is tried again)."""
    results: list[dict] = []

    def one(i: int) -> None:
        sock = connect(dst, cc, timeout)
        buf = b"\0" * _CHUNK
        sent, end = 0, time.monotonic() + duration
        t0 = time.monotonic()
        with sock:
            while time.monotonic() < end:
                try:
                    sent += sock.send(buf)
                except socket.timeout:
                    # blocked longer than the connect timeout (a starved flow in RTO backoff):
                    # still a flow, keep sending until the end
                    continue
                except OSError:
                    break
        secs = time.monotonic() - t0
        results.append({"flow": i, "bytes": sent, "mbps": round(sent * 8 / secs / 1e6, 3)})

    threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for r in results:
        log.write("flow", cc=cc, **r)


def microburst(dst: tuple[str, int], burst: int, size: int, interval: float, count: int,
               log: JsonLog) -> None:
    """`count` bursts (0 = until SIGTERM) of `burst` back-to-back UDP datagrams."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    payload = b"\xb5" * size
    i = 0
    while count == 0 or i < count:
        t0 = time.monotonic()
        sent = 0
        for _ in range(burst):
            try:
                sock.sendto(payload, dst)
                sent += 1
            except OSError:
                pass
        log.write("burst", index=i, packets=sent, bytes=sent * size,
                  seconds=round(time.monotonic() - t0, 6))
        i += 1
        time.sleep(interval)
    sock.close()


def incast(dst: tuple[str, int], count: int, size: int, repeat: int, gap: float, cc: str,
           start_at: float | None, log: JsonLog) -> None:
    """`repeat` times: `count` TCP flows each send `size` bytes to one sink at the same moment;
    logs the completion time of the slowest (the incast burst)."""
    if start_at is not None:
        time.sleep(max(0.0, start_at - time.time()))
    for rep in range(repeat):
        socks = [connect(dst, cc, 10.0) for _ in range(count)]
        done: list[float] = []
        go = threading.Barrier(count + 1)

        def send(sock: socket.socket) -> None:
            go.wait()
            t0 = time.monotonic()
            with sock:
                try:
                    sock.sendall(b"\0" * size)
                    # complete when the sink has read everything and closed its side
                    sock.shutdown(socket.SHUT_WR)
                    sock.recv(1)
                except OSError:
                    pass
            done.append(time.monotonic() - t0)

        threads = [threading.Thread(target=send, args=(s,), daemon=True) for s in socks]
        for t in threads:
            t.start()
        go.wait()
        for t in threads:
            t.join()
        log.write("incast", index=rep, flows=count, bytes_per_flow=size,
                  completion_s=round(max(done), 6), mean_s=round(sum(done) / len(done), 6))
        time.sleep(gap)


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m hosts.background",
                                 description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p_sink = sub.add_parser("sink", help="TCP sink that discards data")
    p_sink.add_argument("--bind", default="0.0.0.0")
    p_sink.add_argument("--port", type=int, default=5001)
    p_sink.add_argument("--report-s", type=float, default=0.0,
                        help="log bytes received per peer every this many seconds (0 = never)")
    p_flows = sub.add_parser("flows", help="long-lived ECN-capable TCP flows")
    p_flows.add_argument("--flows", type=int, default=3)
    p_flows.add_argument("--duration", type=float, default=10.0, help="seconds")
    p_burst = sub.add_parser("microburst", help="bursts of UDP datagrams")
    p_burst.add_argument("--burst", type=int, default=200, help="datagrams per burst")
    p_burst.add_argument("--size", type=int, default=1000, help="UDP payload bytes")
    p_burst.add_argument("--interval-ms", type=float, default=500.0, help="gap between bursts")
    p_burst.add_argument("--count", type=int, default=0, help="bursts (0 = until SIGTERM)")
    p_incast = sub.add_parser("incast", help="synchronized many-to-one TCP transfers")
    p_incast.add_argument("--flows", type=int, default=8)
    p_incast.add_argument("--bytes", type=int, default=256 * 1024, help="bytes per flow")
    p_incast.add_argument("--repeat", type=int, default=1)
    p_incast.add_argument("--gap-ms", type=float, default=1000.0)
    p_incast.add_argument("--start-at", type=float, help="unix time to start (sync several hosts)")
    for p in (p_flows, p_burst, p_incast):
        p.add_argument("--dst", required=True, help="destination IPv4 address")
        p.add_argument("--port", type=int, default=5001 if p is not p_burst else 5002)
    for p in (p_flows, p_incast):
        p.add_argument("--cc", default="dctcp", help="TCP congestion control (fallback cubic)")
        p.add_argument("--ecn", action="store_true", help="also set net.ipv4.tcp_ecn=1 (root)")
    for p in (p_sink, p_flows, p_burst, p_incast):
        p.add_argument("--log", help="JSON-lines log file (default stdout)")
        p.add_argument("--pid-file", help="write this process's PID here")
        p.add_argument("--die-with-parent", action="store_true")
    return ap


def _positive(args: argparse.Namespace, *names: str) -> None:
    for name in names:
        if getattr(args, name) <= 0:
            raise ConfigError(f"--{name.replace('_', '-')} must be positive")


def run(args: argparse.Namespace) -> None:
    log = JsonLog(args.log, role=f"background-{args.cmd}")
    if not 0 <= args.port <= 65535:
        raise ConfigError(f"--port {args.port} is outside 0..65535")
    stop = threading.Event()
    try:
        if args.cmd == "sink":
            if not 0 <= args.report_s < float("inf"):
                raise ConfigError("--report-s must be a finite number >= 0")
            try:
                sink((args.bind, args.port), log, stop, args.report_s)
            finally:
                stop.set()
            return
        dst = (resolve_ipv4(args.dst, "--dst"), args.port)
        if args.cmd == "microburst":
            _positive(args, "burst", "size")
            microburst(dst, args.burst, args.size, args.interval_ms / 1000.0, args.count, log)
            return
        if args.ecn:
            enable_ecn(log)
        cc = choose_congestion_control(args.cc, log)
        if args.cmd == "flows":
            _positive(args, "flows", "duration")
            flows(dst, args.flows, args.duration, cc, log)
        else:
            _positive(args, "flows", "bytes", "repeat")
            incast(dst, args.flows, args.bytes, args.repeat, args.gap_ms / 1000.0, cc,
                   args.start_at, log)
    finally:
        log.close()


def main(argv: list[str] | None = None) -> int:
    return agent_main(build_parser(), run, "hosts.background", argv)


if __name__ == "__main__":
    sys.exit(main())
