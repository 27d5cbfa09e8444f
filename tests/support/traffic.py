"""Test traffic tool run inside Mininet hosts: sends gradient packets, receives and reports them.

    python tests/support/traffic.py send --dst IP --layers 0,10 --count 200 --rate 2000 [...]
    python tests/support/traffic.py recv --idle 2 [--pcn-ack] > report.json

`send` paces packets (interleaving the layers round-robin); with `--pcn` it first sends a
PCN-START control packet to the receiver, waits for the PCN-ACK, waits `--lead` seconds, then
bursts. `recv` binds the gradient UDP port, and prints one JSON report when nothing arrived for
`--idle` seconds: per layer the count and telemetry, the first packets in arrival order, and the
seconds from the first DATA arrival to the last (`span_s`).
"""
from __future__ import annotations

import argparse
import json
import socket
import struct
import sys
import time

from hosts import wire

START_TIMEOUT = 30.0


def _socket(tos: int = 0) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    if tos:
        sock.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, tos)
    return sock


def send(args: argparse.Namespace) -> int:
    layers = [int(x) for x in args.layers.split(",")]
    dst = (args.dst, wire.GRADLANE_UDP_PORT)
    report: dict[str, object] = {"sent": {}}
    if args.pcn:
        ctl = _socket(wire.pcn_tos(start=True, threshold=args.pcn_threshold))
        ctl.bind(("0.0.0.0", wire.GRADLANE_UDP_PORT))
        ctl.settimeout(args.pcn_resend_ms / 1000.0)
        start = wire.pack_header(wire.KIND_PCN_START, 0, args.job, args.rank, wire.ALL_LAYERS, args.round)
        report["pcn_starts"] = 0
        for _attempt in range(args.pcn_tries):
            report["pcn_starts"] += 1
            ctl.sendto(start, dst)
            try:
                data, _ = ctl.recvfrom(2048)
            except socket.timeout:
                continue
            if wire.unpack_header(data).kind == wire.KIND_PCN_ACK:
                report["pcn_ack"] = True
                break
        else:
            report["pcn_ack"] = False
        ctl.close()
    time.sleep(args.lead)
    sock = _socket(wire.data_tos(args.mag, args.eligible_tos))
    payload = struct.pack(f">{args.floats}f", *([0.5] * args.floats))
    interval = 1.0 / args.rate
    t0 = time.monotonic()
    counts = {layer: 0 for layer in layers}
    for i in range(args.count * len(layers)):
        layer = layers[i % len(layers)]
        seq = counts[layer]
        counts[layer] += 1
        header = wire.pack_header(wire.KIND_DATA, args.flags, args.job, args.rank, layer, args.round, args.mag,
                                  len(payload), seq, seq * args.floats)
        sock.sendto(header + payload, dst)
        delay = t0 + (i + 1) * interval - time.monotonic()
        if delay > 0:
            time.sleep(delay)
    report["sent"] = {str(k): v for k, v in counts.items()}
    report["seconds"] = round(time.monotonic() - t0, 3)
    print(json.dumps(report), flush=True)
    return 0


def recv(args: argparse.Namespace) -> int:
    sock = _socket()
    sock.bind(("0.0.0.0", wire.GRADLANE_UDP_PORT))
    print(json.dumps({"listening": True}), file=sys.stderr, flush=True)
    ack_sock = _socket(wire.pcn_tos(ack=True)) if args.pcn_ack else None
    unanswered: dict[tuple[int, int, int], int] = {}
    layers: dict[int, dict[str, float]] = {}
    first: list[list[int]] = []
    sock.settimeout(args.max_wait)
    started = False
    while True:
        try:
            data, peer = sock.recvfrom(4096)
        except socket.timeout:
            break
        try:
            h = wire.unpack_header(data)
        except Exception:  # not ours
            continue
        if h.kind == wire.KIND_PCN_START and ack_sock is not None:
            key = (h.job_id, h.worker_rank, h.round)
            unanswered[key] = unanswered.get(key, 0) + 1
            if unanswered[key] <= args.pcn_ack_skip:
                continue   # as if this ACK were lost: the sender resends its START
            ack = wire.pack_header(wire.KIND_PCN_ACK, 0, h.job_id, wire.PS_RANK, h.layer_id, h.round)
            ack_sock.sendto(ack, peer)
            continue
        if h.kind != wire.KIND_DATA:
            continue
        now = time.monotonic()
        if not started:
            started = True
            first_at = now
            sock.settimeout(args.idle)
        last_at = now
        row = layers.setdefault(h.layer_id, {"count": 0, "qdelay_us_sum": 0, "max_qdepth": 0, "hops": 0})
        row["count"] += 1
        row["qdelay_us_sum"] += h.tele_qdelay_us
        row["max_qdepth"] = max(row["max_qdepth"], h.tele_max_qdepth)
        row["hops"] = max(row["hops"], h.tele_hops)
        if len(first) < args.first:
            first.append([h.layer_id, h.chunk_seq, h.tele_max_qdepth, h.tele_qdelay_us])
    for row in layers.values():
        row["qdelay_us_mean"] = row["qdelay_us_sum"] / row["count"]
    span = round(last_at - first_at, 6) if started else 0.0   # first to last DATA arrival
    print(json.dumps({"layers": {str(k): v for k, v in layers.items()}, "first": first,
                      "span_s": span}), flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("send")
    s.add_argument("--dst", required=True)
    s.add_argument("--layers", default="0")
    s.add_argument("--count", type=int, default=100, help="packets per layer")
    s.add_argument("--rate", type=float, default=1000.0, help="packets/s over all layers")
    s.add_argument("--job", type=int, default=1)
    s.add_argument("--rank", type=int, default=0)
    s.add_argument("--round", type=int, default=1)
    s.add_argument("--mag", type=int, default=0)
    s.add_argument("--floats", type=int, default=64)
    s.add_argument("--eligible-tos", action="store_true", help="Not-ECT TOS (drop-eligible hint)")
    s.add_argument("--pcn", action="store_true", help="PCN-START / wait PCN-ACK before the burst")
    s.add_argument("--pcn-threshold", type=int, default=0)
    s.add_argument("--pcn-resend-ms", type=float, default=2000.0, help="resend PCN-START after this long")
    s.add_argument("--pcn-tries", type=int, default=5, help="PCN-STARTs sent at most")
    s.add_argument("--flags", type=lambda v: int(v, 0), default=0, help="gradient header flags of DATA")
    s.add_argument("--lead", type=float, default=0.0, help="seconds between (PCN-ACK) and burst")
    r = sub.add_parser("recv")
    r.add_argument("--idle", type=float, default=2.0)
    r.add_argument("--max-wait", type=float, default=START_TIMEOUT)
    r.add_argument("--first", type=int, default=20)
    r.add_argument("--pcn-ack", action="store_true")
    r.add_argument("--pcn-ack-skip", type=int, default=0,
                   help="leave the first N PCN-STARTs of each (job, worker, round) unanswered")
    args = p.parse_args(argv)
    return send(args) if args.cmd == "send" else recv(args)


if __name__ == "__main__":
    sys.exit(main())
