"""Gradient goodput (MB/s) and round-time percentiles: ltp vs mlt vs tcp over loopback, with and
without loss injected by a user-space relay (this kernel has no netem), in one run.

Each row runs `python -m hosts.tensor_exchange recv/send` as two real processes; a round is one
tensor set (the --layers sizes, float32) pushed until the receiver says STOP. Goodput counts
only the payload the receiver accepted; round time is measured at the sender (start to STOP).
TCP rows cannot take relay loss (a user-space relay cannot drop TCP segments) and are run direct.
`--cores python,native` runs every ltp/mlt row once per receive core (hosts/transport/core.py;
the senders are Python); `--ios single,batch` once per socket I/O path of every agent
(hosts/transport/endpoint.py: a system call per datagram, or sendmmsg/recvmmsg);
`--send-cores python,native` once per sender core (hosts/transport/data_frames.py: DATA framed
in Python, or natively into the batch send queue; default: the agents' default, native where
built); `--transports ltp --loss ""` keeps only the direct ltp rows. `chunks/s` counts the DATA
datagrams the receiver accepted per second of push; `Gb/s` is that times the datagram's size on
a wire (gradient header, UDP, IPv4 and Ethernet framing: 38 B preamble, header, FCS and gap),
beside 10 Gb/s line rate.
Run: .venv/bin/python benchmarks/transport.py [--rounds 30] [--layers 262144,65536] [--loss 0,0.05]
     [--senders 8 --window 10] [--transports tcp,ltp,mlt] [--cores python,native]
     [--ios single,batch] [--send-cores python,native]
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hosts import wire  # noqa: E402
from hosts.lossy_relay import LossyRelay  # noqa: E402

LINE_RATE_GBPS = 10.0
WIRE_OVERHEAD = 8 + 20 + 38    # UDP, IPv4, Ethernet (header, FCS, preamble, inter-frame gap)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def _start(args: list[str]) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-m", "hosts.tensor_exchange", *args], cwd=ROOT,
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def _stop(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        if p.poll() is None:
            os.kill(p.pid, signal.SIGTERM)
    for p in procs:
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.kill(p.pid, signal.SIGKILL)
            p.wait()


def run_row(transport: str, loss: float | None, args: argparse.Namespace, tmp: Path,
            core: str | None = None, io: str | None = None, send_core: str | None = None) -> dict:
    """One configuration; loss None = direct (no relay); `core`: the receiver's (ltp/mlt);
    `io`: every agent's socket I/O (ltp/mlt); `send_core`: the senders' (ltp/mlt)."""
    port = _free_port()
    tag = f"{transport}-{loss}-{core}-{io}-{send_core}"
    rlog = tmp / f"{tag}-recv.jsonl"
    slogs = [tmp / f"{tag}-send{k}.jsonl" for k in range(args.senders)]
    common = ["--transport", transport, "--layers", args.layers, "--rounds", str(args.rounds),
              "--chunk-elems", str(args.chunk_elems), "--bound", str(args.bound),
              "--deadline-ms", str(args.deadline_ms)]
    if transport != "tcp" and args.window:
        common += ["--window", str(args.window)]
    recv_core = ["--core", core] if core is not None and transport != "tcp" else []
    sender_core = ["--core", send_core] if send_core is not None and transport != "tcp" else []
    if io is not None and transport != "tcp":
        common += ["--io", io]
    procs = [_start(["recv", "--bind", "127.0.0.1", "--port", str(port), "--log", str(rlog),
                     "--senders", str(args.senders), *common, *recv_core])]
    relay = None
    try:
        target = port
        if loss is not None:
            relay = LossyRelay(("127.0.0.1", 0), ("127.0.0.1", port), loss, seed=7).start()
            target = relay.address[1]
        for k, slog in enumerate(slogs):
            procs.append(_start(["send", "--to", f"127.0.0.1:{target}", "--bind", "127.0.0.1",
                                 "--rank", str(k), "--log", str(slog), *common, *sender_core]))
        for p in reversed(procs):
            _, err = p.communicate(timeout=600)
            if p.returncode != 0:
                raise RuntimeError(f"{tag}: {err.strip()}")
    finally:
        _stop(procs)
        if relay is not None:
            relay.stop()
    per_sender = [[e for e in _jsonl(slog) if e["event"] == "round"][args.warmup:] for slog in slogs]
    sent = [e for rounds in per_sender for e in rounds]
    recv = [e for e in _jsonl(rlog) if e["event"] == "round"][args.warmup:]
    # a round lasts until its slowest sender got STOP
    round_times = [max(r[i]["seconds"] for r in per_sender) for i in range(len(per_sender[0]))]
    times = sorted(round_times)
    payload = sum(e["payload_bytes"] for e in recv)
    chunk_bytes = args.chunk_elems * 4
    q = statistics.quantiles(times, n=100, method="inclusive") if len(times) > 1 else times * 99
    pps = payload / chunk_bytes / sum(times)
    return {"transport": transport, "core": "" if transport == "tcp" else (core or "default"),
            "io": "" if transport == "tcp" else (io or "default"),
            "send_core": "" if transport == "tcp" else (send_core or "default"),
            "gbps": pps * (chunk_bytes + wire.HEADER_LEN + WIRE_OVERHEAD) * 8 / 1e9,
            "loss": "direct" if loss is None else f"{loss:.0%} relay",
            "goodput": payload / sum(times) / 1e6, "pps": pps, "p50": q[49] * 1e3, "p90": q[89] * 1e3,
            "p99": q[98] * 1e3, "delivered": min(min(e["delivered"]) for e in recv),
            "retx": sum(e["retransmissions"] for e in sent) / len(round_times)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=3, help="first rounds left out of the figures")
    ap.add_argument("--layers", default="262144,65536", help="float32 elements per layer")
    ap.add_argument("--chunk-elems", type=int, default=256)
    ap.add_argument("--bound", type=float, default=0.1)
    ap.add_argument("--deadline-ms", type=float, default=2000.0)
    ap.add_argument("--loss", default="0,0.05", help="relay loss rates (comma-separated)")
    ap.add_argument("--senders", type=int, default=1, help="senders pushing to one receiver")
    ap.add_argument("--window", type=int, default=0,
                    help="ltp/mlt rows: the UDP sender's initial congestion window (0 = none)")
    ap.add_argument("--transports", default="tcp,ltp,mlt", help="rows to run (comma-separated)")
    ap.add_argument("--cores", default="",
                    help="receive cores of the ltp/mlt rows, each row once per core (comma-"
                         "separated: python, native; default: the agents' default)")
    ap.add_argument("--ios", default="",
                    help="socket I/O of the ltp/mlt rows' agents, each row once per path (comma-"
                         "separated: single, batch; default: the agents' default)")
    ap.add_argument("--send-cores", default="",
                    help="sender cores of the ltp/mlt rows, each row once per core (comma-"
                         "separated: python, native; default: the agents' default)")
    args = ap.parse_args()
    if args.rounds <= args.warmup:
        ap.error("--rounds must exceed --warmup")
    try:
        losses = [float(x) for x in args.loss.split(",") if x.strip()]
    except ValueError:
        ap.error(f"--loss {args.loss!r}: comma-separated rates expected")
    transports = [t.strip() for t in args.transports.split(",") if t.strip()]
    if not transports or any(t not in ("tcp", "ltp", "mlt") for t in transports):
        ap.error(f"--transports {args.transports!r}: choose among tcp, ltp, mlt")
    cores: list[str | None] = [c.strip() for c in args.cores.split(",") if c.strip()] or [None]
    if any(c not in ("python", "native", None) for c in cores):
        ap.error(f"--cores {args.cores!r}: choose among python, native")
    ios: list[str | None] = [x.strip() for x in args.ios.split(",") if x.strip()] or [None]
    if any(x not in ("single", "batch", None) for x in ios):
        ap.error(f"--ios {args.ios!r}: choose among single, batch")
    send_cores: list[str | None] = [c.strip() for c in args.send_cores.split(",") if c.strip()] or [None]
    if any(c not in ("python", "native", None) for c in send_cores):
        ap.error(f"--send-cores {args.send_cores!r}: choose among python, native")
    plan = [(t, None, c, x, sc) for t in ("tcp", "ltp", "mlt") if t in transports
            for c in ([None] if t == "tcp" else cores) for x in ([None] if t == "tcp" else ios)
            for sc in ([None] if t == "tcp" else send_cores)]
    plan += [(t, loss, c, x, sc) for loss in losses for t in ("ltp", "mlt") if t in transports
             for c in cores for x in ios for sc in send_cores]
    mb = sum(int(x) for x in args.layers.split(",")) * 4 / 1e6
    print(f"tensor set {mb:.2f} MB per round ({args.layers} float32), chunk {args.chunk_elems} "
          f"values, bound {args.bound}, window {args.window or 'none'}, "
          f"{args.senders} sender(s) -> 1 receiver, "
          f"{args.rounds - args.warmup} measured rounds per row")
    print(f"{'transport':<10}{'core':<8}{'send':<8}{'io':<8}{'path':<13}{'goodput MB/s':>13}{'chunks/s':>9}"
          f"{'Gb/s':>7}{'of 10G':>7}{'p50 ms':>9}{'p90 ms':>9}"
          f"{'p99 ms':>9}{'min deliv':>10}{'retx/round':>11}")
    with tempfile.TemporaryDirectory() as tmp:
        for transport, loss, core, io, send_core in plan:
            r = run_row(transport, loss, args, Path(tmp), core, io, send_core)
            print(f"{r['transport']:<10}{r['core']:<8}{r['send_core']:<8}{r['io']:<8}{r['loss']:<13}{r['goodput']:>13.1f}"
                  f"{r['pps']:>9.0f}{r['gbps']:>7.3f}{r['gbps'] / LINE_RATE_GBPS:>7.1%}"
                  f"{r['p50']:>9.1f}"
                  f"{r['p90']:>9.1f}{r['p99']:>9.1f}{r['delivered']:>10.3f}{r['retx']:>11.1f}",
                  flush=True)
    print("ltp and mlt differ on the wire only in priority hints (DSCP/ECN, DROPPABLE) and "
          "per-layer/phase bounds; loopback has no switch to act on them.")


if __name__ == "__main__":
    main()
