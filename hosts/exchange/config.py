"""Transport flags shared by the parameter server and the workers, and the config they build."""
from __future__ import annotations

import argparse
import json
import zlib
from dataclasses import dataclass

from hosts.errors import ConfigError
from hosts.transport.bounds import LayerBounds, parse_bound_list
from hosts.transport.holes import HoleFill
from hosts.transport.phase import DEFAULT_HIGH_DELTA
from hosts.transport.sender import SendOptions
from hosts.wire import pcn_tos

TRANSPORTS = ("ltp", "tcp", "mlt")


@dataclass(frozen=True)
class TransportConfig:
    """Everything the exchange needs; `bounds` already reflects the transport kind."""

    kind: str
    job_id: int
    chunk_elems: int
    send: SendOptions
    deadline: float
    pull_deadline: float
    peer_timeout: float
    join_timeout: float
    hole_fill: HoleFill
    bounds: LayerBounds
    phase_aware: bool
    phase_high_delta: float
    pcn: bool
    pcn_threshold: int
    pcn_timeout: float

    @property
    def udp(self) -> bool:
        return self.kind != "tcp"


def add_transport_arguments(ap: argparse.ArgumentParser) -> None:
    g = ap.add_argument_group("transport")
    g.add_argument("--transport", default="ltp", choices=TRANSPORTS,
                   help="ltp: loss-tolerant UDP with per-layer/phase bounds and priority hints; "
                        "mlt: same UDP transport, one fixed bound, no switch hints; tcp: reliable")
    g.add_argument("--job", type=int, default=1, help="job_id in the gradient header (0..65535)")
    g.add_argument("--bound", type=float, default=0.1,
                   help="loss bound: fraction of a layer that may be lost in the push (P_low "
                        "with --phase-aware)")
    g.add_argument("--layer-bounds", help="comma-separated push bound per layer (PLOT), "
                                          "layer 0 = nearest the input")
    g.add_argument("--pull-bound", type=float,
                   help="bound of the pull stage (default: a quarter of each push bound)")
    g.add_argument("--phase-aware", action="store_true",
                   help="DBLP: P_high = bound + delta unless the gradient norm changes fast")
    g.add_argument("--phase-delta", type=float, default=DEFAULT_HIGH_DELTA,
                   help="P_high - P_low for --phase-aware (default 0.40)")
    g.add_argument("--hole-fill", default="zeros", choices=[h.value for h in HoleFill],
                   help="push-stage holes no worker delivered: zeros or the previous round's "
                        "aggregate (pull-stage holes always keep the previous parameters)")
    g.add_argument("--deadline-ms", type=float, default=500.0,
                   help="push acceptance deadline after a sender's first packet (LTP early close)")
    g.add_argument("--pull-deadline-ms", type=float, help="pull deadline (default: --deadline-ms)")
    g.add_argument("--chunk-elems", type=int, default=64, help="float32 values per DATA packet")
    g.add_argument("--pace-pps", type=float, default=0.0, help="DATA packets/s per sender (0 = unpaced)")
    g.add_argument("--probe-ms", type=float, default=20.0, help="probe interval once all was sent")
    g.add_argument("--order", default="layer", choices=("layer", "shuffle"),
                   help="send order of chunks")
    g.add_argument("--peer-timeout", type=float, default=10.0,
                   help="seconds of silence after which a peer counts as dead")
    g.add_argument("--join-timeout", type=float, default=60.0,
                   help="seconds to wait for every peer in the first round")
    g.add_argument("--pcn", action="store_true",
                   help="PCN: worker sends PCN-START before each push burst, PS answers PCN-ACK")
    g.add_argument("--pcn-threshold", type=int, default=10,
                   help="ECN threshold (packets, multiple of 5) requested by PCN-START")
    g.add_argument("--pcn-timeout-ms", type=float, default=50.0, help="wait for PCN-ACK")


def config_from_args(args: argparse.Namespace, num_layers: int, seed: int) -> TransportConfig:
    """Validate the transport flags against the model; ConfigError names the bad flag."""
    if not 0 <= args.job <= 0xFFFF:
        raise ConfigError(f"--job {args.job} is outside 0..65535")
    for name in ("deadline_ms", "probe_ms", "peer_timeout", "join_timeout", "pcn_timeout_ms"):
        if getattr(args, name) <= 0:
            raise ConfigError(f"--{name.replace('_', '-')} must be positive")
    if args.pace_pps < 0:
        raise ConfigError("--pace-pps must be >= 0")
    layer_bounds = parse_bound_list(args.layer_bounds, "--layer-bounds") if args.layer_bounds else None
    if args.transport == "mlt" and (layer_bounds or args.phase_aware):
        raise ConfigError("--transport mlt uses one fixed bound; drop --layer-bounds/--phase-aware")
    if args.transport == "tcp" and args.pcn:
        raise ConfigError("--pcn needs a UDP transport (--transport ltp or mlt)")
    try:
        pcn_tos(start=True, threshold=args.pcn_threshold)
    except ValueError as exc:
        raise ConfigError(f"--pcn-threshold: {exc}") from None
    bounds = LayerBounds.build(num_layers, args.bound, layer_bounds, args.pull_bound)
    send = SendOptions(pace_pps=args.pace_pps, probe_interval=args.probe_ms / 1000.0,
                       peer_timeout=args.peer_timeout, priority_hints=args.transport == "ltp",
                       order=args.order, seed=seed)
    pull_deadline = args.pull_deadline_ms if args.pull_deadline_ms is not None else args.deadline_ms
    if pull_deadline <= 0:
        raise ConfigError("--pull-deadline-ms must be positive")
    return TransportConfig(
        kind=args.transport, job_id=args.job, chunk_elems=args.chunk_elems, send=send,
        deadline=args.deadline_ms / 1000.0, pull_deadline=pull_deadline / 1000.0,
        peer_timeout=args.peer_timeout, join_timeout=args.join_timeout,
        hole_fill=HoleFill.parse(args.hole_fill), bounds=bounds, phase_aware=args.phase_aware,
        phase_high_delta=args.phase_delta, pcn=args.pcn, pcn_threshold=args.pcn_threshold,
        pcn_timeout=args.pcn_timeout_ms / 1000.0)


def fingerprint(layer_sizes: list[int], chunk_elems: int, config: TransportConfig) -> int:
    """32-bit digest of what PS and workers must agree on: layer sizes, chunking, transport, job."""
    text = json.dumps([layer_sizes, chunk_elems, config.kind, config.job_id])
    return zlib.crc32(text.encode())
