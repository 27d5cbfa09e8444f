"""Transport flags shared by the parameter server and the workers, and the config they build."""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import secrets
import zlib
from dataclasses import dataclass, field

from hosts.errors import ConfigError
from hosts.exchange import job_key, tcp_options
from hosts.policy_client import HostPolicy
from hosts.transport.bounds import SCOPES, LayerBounds, LossBudget, parse_bound_list
from hosts.transport.chunk_size import MTU_CHUNK_ELEMS, default_chunk_sizes
from hosts.transport.chunking import ORDERS, ChunkPlan
from hosts.transport.congestion import LOSS_RESPONSES, RULES as CC_RULES, check_loss_response
from hosts.transport.congestion import SWITCH_ECN_THRESHOLD
from hosts.transport.deadline import NO_DEADLINE, DeadlineSettings
from hosts.transport.holes import DEFAULT_HOLE_FILL, HoleFill
from hosts.transport import core as transport_core
from hosts.transport.endpoint import IO_MODES, resolve_io
from hosts.transport.packet_mac import DEFAULT_MODE as DEFAULT_MAC_MODE, MODES as MAC_MODES, TAG_BYTES, packet_key
from hosts.transport.phase import DEFAULT_CHECK_ROUNDS, DEFAULT_HIGH_DELTA
from hosts.transport.receiver import ReceiveOptions
from hosts.transport.sender import SCHEDULES, SendOptions
from hosts.wire import MAX_DATA_PAYLOAD, pcn_tos

TRANSPORTS = ("ltp", "tcp", "mlt")
DEFAULT_BOUND = 0.1
# the UDP sender's initial window in DATA packets; without one a probe overtakes queued DATA
DEFAULT_WINDOW = 10

TRANSPORT_HELP = (
    "ltp: our loss-tolerant UDP transport: one bound over the tensor (LTP, MLT, DBLP) or per-layer "
    "bounds (PLOT; --bound-scope), optional phases (DBLP), "
    "priority and drop hints for the switches, adaptive early close (LTP). "
    "mlt: the software-MLT baseline of the DBLP paper: the same UDP transport with ONE fixed "
    "--bound for push and pull alike, no per-layer bounds, no phases, a fixed deadline, and no "
    "network assistance (every packet carries the PLAIN flag, so switches treat it as ordinary "
    "traffic: no gradient classification, priority or loss budget); it takes ltp's "
    "--bound-scope, --order and --cc, so arms can be matched. "
    "tcp: reliable baseline, one TCP connection per worker (--tcp-cc, --tcp-ecn)")


@dataclass(frozen=True)
class TransportConfig:
    """Everything the exchange needs; `bounds` already reflects the transport kind."""

    kind: str
    job_id: int
    chunk_elems: int
    send: SendOptions
    push_deadline: DeadlineSettings
    pull_deadline: DeadlineSettings
    peer_timeout: float
    join_timeout: float
    hole_fill: HoleFill
    bounds: LayerBounds
    reliable_pull: bool
    phase_aware: bool
    phase_high_delta: float
    phase_check_rounds: int
    phase_per_layer: bool
    pcn: bool
    pcn_threshold: int
    pcn_timeout: float
    tcp_cc: str | None = None
    tcp_ecn: bool | None = None
    controller: str | None = None
    # The job's secret (--job-key): the join proves it. Without the flag a random one, which
    # only a PS and workers built from this same config share (in-process use).
    job_key: bytes = field(default_factory=lambda: secrets.token_bytes(job_key.KEY_BYTES),
                           repr=False)
    packet_mac: str = "off"      # which kinds carry a MAC trailer: off, control, all (packet_mac.MODES)
    ack_delay: float = 0.002     # seconds a receiver holds an ACK of fewer than ack_every chunks
    # No --chunk-elems: `chunk_elems` is the MTU's, and with_chunk_plan cuts small-bound layers
    # finer (hosts/transport/chunk_size.py); `chunking` says what was chosen and why.
    chunk_auto: bool = False
    chunking: str = ""
    pull_budget_chunks: int | None = None   # chunks the pull may leave missing (with_chunk_plan)
    core: str = "python"   # the receive side's core, native or python (hosts/transport/core.py)
    io: str = "single"     # the endpoint's socket I/O, batch or single (hosts/transport/endpoint.py)
    pull_schedule: str = "together"   # how the PS's pull shares its port (sender.SCHEDULES)

    @property
    def mac_key(self) -> bytes | None:
        """The key of the datagrams' MAC trailers (--packet-mac control or all), else None."""
        return packet_key(self.job_key) if self.packet_mac != "off" else None

    @property
    def mac_mode(self) -> str:
        """Which kinds carry the trailer (hosts/transport/packet_mac.py)."""
        return self.packet_mac

    @property
    def udp(self) -> bool:
        return self.kind != "tcp"

    @property
    def plain(self) -> bool:
        """No network assistance: every packet carries FLAG_PLAIN (the MLT baseline)."""
        return self.send.plain

    def summary(self) -> dict:
        """What a run's results record about the transport."""
        out = {"transport": self.kind, "pace_pps": self.send.pace_pps,
               "bounds_from": "controller" if self.controller else "flags",
               "chunking": self.chunking or f"{self.chunk_elems} float32 per DATA packet",
               "pull": self.pull_kind()}
        if self.udp:
            out.update(hole_fill=self.hole_fill.value, plain=self.plain, packet_mac=self.packet_mac,
                       priority_hints=self.send.priority_hints,
                       push_deadline=self.push_deadline.describe(),
                       pull_deadline=self.pull_deadline.describe(),
                       reliable_pull=self.reliable_pull, phase_aware=self.phase_aware,
                       probe_ms=round(self.send.probe_interval * 1000, 3),
                       ack_delay_ms=round(self.ack_delay * 1000, 3),
                       probe_on_silence=self.send.probe_on_silence, window=self.send.window,
                       bound_scope=self.bounds.scope, order=self.send.order, cc=self.send.cc, cc_loss=self.send.cc_loss,
                       core=self.core, io=self.io, port_mbps=self.send.port_mbps,
                       pull_schedule=self.pull_schedule)
            if self.phase_aware:
                out.update(phase_check_rounds=self.phase_check_rounds,
                           phase_per_layer=self.phase_per_layer)
        else:
            out.update(tcp_cc=self.tcp_cc or f"default ({tcp_options.default_congestion_control()})",
                       tcp_ecn={True: "on", False: "off", None: "default"}[self.tcp_ecn])
        return out

    def receive_options(self, deadline: float, absent_timeout: float,
                        scope: str | None = None) -> ReceiveOptions:
        """A receive session's options under this configuration: its ACK delay and probe
        interval (the PROBE answer rate), the bounds' scope unless `scope` is given."""
        return ReceiveOptions(deadline=deadline, absent_timeout=absent_timeout,
                              scope=self.bounds.scope if scope is None else scope,
                              ack_delay=self.ack_delay, probe_interval=self.send.probe_interval)

    def pull_kind(self) -> str:
        """Which pull this transport runs, for a summary: reliable, or bounded (holes keep the
        worker's previous parameters)."""
        if not self.udp:
            return "reliable (TCP)"
        pull = self.bounds.pull
        if self.reliable_pull or not any(pull):
            return "reliable (every parameter delivered)"
        low, high = min(pull), max(pull)
        share = f"{high:.4g}" if low == high else f"{low:.4g}..{high:.4g}"
        if self.pull_budget_chunks == 0:
            return (f"bounded ({share} per {self.bounds.scope}) but under one chunk: runs "
                    f"reliable (no pull deadline)")
        return (f"bounded ({share} per {self.bounds.scope}; lost parameters keep their "
                f"previous values)")


def add_transport_arguments(ap: argparse.ArgumentParser) -> None:
    g = ap.add_argument_group("transport")
    g.add_argument("--transport", default="ltp", choices=TRANSPORTS, help=TRANSPORT_HELP)
    g.add_argument("--job", type=int, default=1, help="job_id in the gradient header (0..65535)")
    g.add_argument("--job-key", metavar="FILE",
                   help="the job's secret: a file only its owner may read (mode 0600) holding "
                        "the key in hex; the PS creates it when missing. Workers prove it to "
                        "the PS when they join (HMAC-SHA256, never sent); required by the agents")
    g.add_argument("--packet-mac", nargs="?", const="all", choices=MAC_MODES, metavar="MODE",
                   help="ltp, mlt: which datagrams carry a 16-byte HMAC-SHA256 trailer under a "
                        "key from --job-key (one without a valid trailer is dropped, so a packet "
                        "with a peer's spoofed source address changes nothing): 'control' (the "
                        "default) every kind but DATA; 'all' (the bare flag) DATA too, which adds "
                        "about 6%% to a round over 'control' with the native MAC (21%% with the "
                        "Python one; benchmarks/join_auth.py, docs/security.md) and "
                        "closes the last spoofing path, a DATA packet inside the round and window "
                        "the receiver expects; 'off' none. PS and workers must agree")
    g.add_argument("--controller", metavar="SOCKET",
                   help="ltp: follow the controller's policy for --job (bounds, drop-eligible "
                        "classes, hole filling, regime) over its unix socket; without it the "
                        "flags below decide")
    g.add_argument("--bound", type=float, default=None,
                   help="loss bound: fraction of the tensor (--bound-scope tensor) or of each "
                        "layer (layer) that may be lost in the push (P_low with --phase-aware; "
                        "push and pull alike for mlt; default 0.1)")
    g.add_argument("--layer-bounds", help="ltp: comma-separated push bound per layer (PLOT), "
                                          "layer 0 = nearest the input; implies --bound-scope "
                                          "layer")
    g.add_argument("--bound-scope", choices=SCOPES,
                   help="tensor: one bound over the whole tensor, any chunk may be the missing "
                        "one (LTP, MLT, DBLP; the default, also for a controller's per-layer "
                        "bounds, whose budgets are then pooled); layer: every layer meets its "
                        "own bound (PLOT; the default with --layer-bounds)")
    g.add_argument("--pull-bound", type=float,
                   help="ltp: bound of the pull stage (default: a quarter of each push bound)")
    g.add_argument("--reliable-pull", action="store_true",
                   help="ltp: LTP's reliable broadcast: the pull stage has no bound and no "
                        "deadline (every parameter is delivered)")
    g.add_argument("--phase-aware", action="store_true",
                   help="ltp, DBLP: P_high = bound + delta unless the gradient norm changes fast")
    g.add_argument("--phase-delta", type=float, default=DEFAULT_HIGH_DELTA,
                   help="P_high - P_low for --phase-aware (default 0.40)")
    g.add_argument("--phase-check-rounds", type=int, default=DEFAULT_CHECK_ROUNDS,
                   help="rounds between DBLP's gradient-norm checks (default 10, as the authors)")
    g.add_argument("--phase-per-layer", action="store_true",
                   help="DBLP detection per layer (each layer's norm decides its own phase)")
    g.add_argument("--hole-fill", default=None, choices=[h.value for h in HoleFill],
                   help="push-stage holes: zero (DLCP: a missing contribution counts as 0 in the "
                        "mean over all workers), previous (MLT: the worker's last delivered "
                        "value), mean-delivered (mean over the workers that delivered; default). "
                        "Pull-stage holes always keep the previous parameters. With --controller "
                        "the policy's hole_fill wins when it names one")
    g.add_argument("--deadline", choices=("telemetry", "adaptive", "fixed"),
                   help="acceptance deadline (LTP early close): adaptive = --deadline-mult x the "
                        "smoothed transfer time (EWMA 1/8) within [floor, ceiling]; telemetry = "
                        "the same plus twice the path queueing delay the switches report, and "
                        "x2 instead of --deadline-mult while every queue is empty "
                        "(docs/control-laws.md); fixed = --deadline-ms. Default telemetry for "
                        "ltp, fixed for mlt")
    g.add_argument("--deadline-ms", type=float, default=500.0,
                   help="push deadline after a sender's first packet: the fixed value, or the "
                        "adaptive start value (default 500)")
    g.add_argument("--pull-deadline-ms", type=float, help="pull deadline (default: --deadline-ms)")
    g.add_argument("--deadline-floor-ms", type=float, default=200.0,
                   help="adaptive floor (200: ten default probe intervals, room for repairs)")
    g.add_argument("--deadline-ceiling-ms", type=float, default=2000.0,
                   help="adaptive ceiling (2000)")
    g.add_argument("--deadline-mult", type=float, default=3.0,
                   help="adaptive multiple of the smoothed transfer time (3)")
    g.add_argument("--chunk-elems", type=int, default=None,
                   help="float32 values per DATA packet, every layer (default: as many as fill a "
                        f"1500-byte MTU, {MTU_CHUNK_ELEMS}, or {(MAX_DATA_PAYLOAD - TAG_BYTES) // 4} "
                        "with --packet-mac all; a layer whose push bound covers less than one such "
                        "chunk gets chunks as large as its bound covers, so the bound can act)")
    g.add_argument("--pace-pps", type=float, default=0.0,
                   help="packets/s per sender (0 = unpaced); tcp: SO_MAX_PACING_RATE of as many "
                        "full segments per second")
    g.add_argument("--port-mbps", type=float, default=0.0, metavar="MBPS",
                   help="line rate of this host's own link (0 = not known, the default): the UDP "
                        "senders on this host share one pacing budget at that rate, so the PS's "
                        "pull to N workers does not overrun its own host's queue")
    g.add_argument("--priority-hints", choices=("on", "off"), default="on",
                   help="ltp: DSCP of DATA packets by magnitude class, ECN Not-ECT when droppable "
                        "(on, default), or TOS 0 (off: a switch told not to prioritize the job "
                        "queues its DATA with ordinary DSCP-0 traffic; for ablations)")
    g.add_argument("--probe-ms", type=float, default=20.0, help="probe interval once all was sent")
    g.add_argument("--ack-delay-ms", type=float, default=2.0,
                   help="longest a receiver holds an ACK for fewer than 16 new chunks (default 2)")
    g.add_argument("--probe-on-silence", action="store_true",
                   help="probe only after --probe-ms without new ACKs (a queue that still drains "
                        "keeps ACKs coming; default: probe right after the first pass)")
    g.add_argument("--window", type=int, default=DEFAULT_WINDOW, metavar="PACKETS",
                   help=f"initial congestion window of the UDP sender in DATA packets (default "
                        f"{DEFAULT_WINDOW}, TCP's initial window); grows per ACK and shrinks by --cc; "
                        "implies --probe-on-silence. 0: no window, every chunk at once (a probe "
                        "then overtakes DATA still queued at a priority switch and its BITMAP calls "
                        "it lost: docs/mechanisms.md)")
    g.add_argument("--cc", default="ecn", choices=CC_RULES,
                   help="how the --window reacts (ltp, mlt): ecn (default, DCTCP-like): to CE "
                        "marks and to a telemetry queueing delay above --cc-delay-ms, to loss "
                        "only beyond the bound; mlt's DATA is then ECN-capable. reno: halves on "
                        "every loss, ignores marks (docs/mechanisms.md)")
    g.add_argument("--cc-loss", default="always", choices=LOSS_RESPONSES,
                   help="--cc ecn: whether a loss beyond the bound cuts the window always "
                        "(default), or only when an ACK showed congestion (a CE mark, a switch "
                        "queue deeper than --cc-mark-depth) within the last 2 round trips: "
                        "congested (random loss on a path of short queues then leaves the window "
                        "alone; docs/mechanisms.md)")
    g.add_argument("--cc-delay-ms", type=float, default=20.0,
                   help="--cc ecn: every packet of an ACK echoing a longer path queueing delay "
                        "counts as marked (default 20)")
    g.add_argument("--cc-mark-depth", type=int, default=SWITCH_ECN_THRESHOLD, metavar="PACKETS",
                   help="--cc ecn: the Not-ECT (drop-eligible) packets of an ACK echoing a "
                        "switch queue deeper than this count as marked (default "
                        f"{SWITCH_ECN_THRESHOLD}: the switches' default ECN threshold)")
    g.add_argument("--order", default="interleave", choices=ORDERS,
                   help="first-pass send order of chunks: interleave (default: every layer "
                        "spread over the pass, so the tail holds chunks of all layers), shuffle "
                        "(random, seeded by --seed, the job and the round), layer (layer 0 "
                        "first)")
    g.add_argument("--pull-schedule", choices=SCHEDULES, default="together",
                   help="ltp, mlt, the PS: how its pull shares its port among the workers: "
                        "together (default: one DATA packet each in turn, the pulls end "
                        "together and the next pushes start together) or serial (the lowest "
                        "rank first, as far as its window lets it: the pulls end one after "
                        "another, and each worker's next push overlaps the later workers' "
                        "pulls on the PS's link; docs/mechanisms.md)")
    g.add_argument("--core", choices=transport_core.CORES, default=None,
                   help="the transport core: native (C++, the default where it was built at "
                        "install: the receive side, and the sender's session opening, DATA "
                        "frames and ACK pass) or python (the reference); a native core that "
                        "was not built runs the Python one, said in one line")
    g.add_argument("--io", choices=IO_MODES, default=None,
                   help="the UDP endpoint's socket I/O: batch (sendmmsg/recvmmsg, the TOS per "
                        "datagram; the default where the native extension was built) or single "
                        "(one system call per datagram, the reference)")
    g.add_argument("--peer-timeout", type=float, default=10.0,
                   help="seconds of silence after which a peer counts as dead")
    g.add_argument("--join-timeout", type=float, default=60.0,
                   help="seconds to wait for every peer in the first round")
    g.add_argument("--pcn", action="store_true",
                   help="PCN: worker sends PCN-START before each push burst, PS answers PCN-ACK")
    g.add_argument("--pcn-threshold", type=int, default=10,
                   help="ECN threshold (packets, multiple of 5) requested by PCN-START")
    g.add_argument("--pcn-timeout-ms", type=float, default=50.0, help="wait for PCN-ACK")
    g.add_argument("--tcp-cc", metavar="NAME",
                   help="tcp: congestion control per socket (reno, cubic, bbr, ... as "
                        "net.ipv4.tcp_available_congestion_control offers; default: the system's)")
    g.add_argument("--tcp-ecn", choices=("on", "off"),
                   help="tcp: ECN on or off; checked against this network namespace's "
                        "net.ipv4.tcp_ecn (on: 1, off: 0 or 2), which the agent never changes")


def _ms(value: float | None) -> float | None:
    return None if value is None else value / 1000.0


def config_from_args(args: argparse.Namespace, num_layers: int, seed: int,
                     create_key: bool = False) -> TransportConfig:
    """Validate the transport flags against the model; ConfigError names the bad flag.
    `create_key`: create the --job-key file with a fresh key when it does not exist (the PS)."""
    if not 0 <= args.job <= 0xFFFF:
        raise ConfigError(f"--job {args.job} is outside 0..65535")
    for name in ("deadline_ms", "probe_ms", "ack_delay_ms", "peer_timeout", "join_timeout", "pcn_timeout_ms",
                 "deadline_floor_ms", "deadline_ceiling_ms"):
        value = getattr(args, name)
        if not (value > 0 and math.isfinite(value)):
            raise ConfigError(f"--{name.replace('_', '-')} must be a positive number")
    if not (args.port_mbps >= 0 and math.isfinite(args.port_mbps)):
        raise ConfigError(f"--port-mbps {args.port_mbps} is not a rate >= 0")
    if not (args.pace_pps >= 0 and math.isfinite(args.pace_pps)):
        raise ConfigError("--pace-pps must be >= 0")
    if args.window < 0:
        raise ConfigError("--window must be >= 0 packets")
    if not (args.cc_delay_ms > 0 and math.isfinite(args.cc_delay_ms)):
        raise ConfigError("--cc-delay-ms must be a positive number")
    if args.cc_mark_depth < 0:
        raise ConfigError("--cc-mark-depth must be >= 0 packets")
    check_loss_response(args.cc, args.cc_loss)
    kind = args.transport
    if args.controller:
        if kind != "ltp":
            raise ConfigError(f"--controller needs --transport ltp (the {kind} baseline takes no "
                              "network policy)")
        given = [flag for flag, v in (("--bound", args.bound), ("--layer-bounds", args.layer_bounds),
                                      ("--pull-bound", args.pull_bound)) if v is not None]
        if given:
            raise ConfigError(f"{', '.join(given)}: the controller's policy gives the bounds "
                              "with --controller; drop one or the other")
    bound = DEFAULT_BOUND if args.bound is None else args.bound
    layer_bounds = parse_bound_list(args.layer_bounds, "--layer-bounds") if args.layer_bounds else None
    if kind == "mlt":
        extra = [flag for flag, on in (("--layer-bounds", layer_bounds),
                                       ("--phase-aware", args.phase_aware),
                                       ("--pull-bound", args.pull_bound is not None),
                                       ("--reliable-pull", args.reliable_pull),
                                       ("--deadline adaptive", args.deadline == "adaptive"),
                                       ("--deadline telemetry", args.deadline == "telemetry"))
                 if on]
        if extra:
            raise ConfigError(f"--transport mlt uses one fixed bound for push and pull and a fixed "
                              f"deadline; drop {', '.join(extra)}")
    if kind == "tcp" and args.packet_mac not in (None, "off"):
        raise ConfigError("--packet-mac needs a UDP transport (--transport ltp or mlt)")
    mac_mode = "off" if kind == "tcp" else (args.packet_mac or DEFAULT_MAC_MODE)
    data_mac = mac_mode == "all"
    chunk_auto = args.chunk_elems is None
    chunk_elems = ((MAX_DATA_PAYLOAD - (TAG_BYTES if data_mac else 0)) // 4 if chunk_auto
                   else args.chunk_elems)
    if not 1 <= chunk_elems <= MTU_CHUNK_ELEMS:
        raise ConfigError(f"--chunk-elems {chunk_elems} is outside 1..{MTU_CHUNK_ELEMS}")
    if data_mac and chunk_elems * 4 > MAX_DATA_PAYLOAD - TAG_BYTES:
        raise ConfigError(f"--chunk-elems {chunk_elems} with --packet-mac all: a DATA packet and "
                          f"its MAC must fit a 1500-byte MTU (at most "
                          f"{(MAX_DATA_PAYLOAD - TAG_BYTES) // 4} elements)")
    scope = args.bound_scope or ("layer" if layer_bounds is not None else "tensor")
    if scope == "tensor" and layer_bounds is not None:
        raise ConfigError("--layer-bounds gives one bound per layer; it needs --bound-scope layer")
    if kind == "tcp" and args.pcn:
        raise ConfigError("--pcn needs a UDP transport (--transport ltp or mlt)")
    if kind != "ltp" and args.priority_hints == "off":
        raise ConfigError("--priority-hints off needs --transport ltp (mlt sends TOS 0 anyway)")
    pull_schedule = getattr(args, "pull_schedule", "together")
    if kind == "tcp" and pull_schedule != "together":
        raise ConfigError("--pull-schedule needs a UDP transport (--transport ltp or mlt)")
    if kind != "tcp" and (args.tcp_cc or args.tcp_ecn):
        raise ConfigError("--tcp-cc and --tcp-ecn need --transport tcp")
    if args.phase_check_rounds < 1:
        raise ConfigError(f"--phase-check-rounds {args.phase_check_rounds} must be at least 1")
    if args.phase_per_layer and not args.phase_aware:
        raise ConfigError("--phase-per-layer needs --phase-aware")
    if args.reliable_pull and args.pull_bound is not None:
        raise ConfigError("--reliable-pull delivers the whole pull; drop --pull-bound")
    try:
        pcn_tos(start=True, threshold=args.pcn_threshold)
    except ValueError as exc:
        raise ConfigError(f"--pcn-threshold: {exc}") from None
    tcp_cc = tcp_options.check_congestion_control(args.tcp_cc) if args.tcp_cc else None
    if kind == "mlt":
        bounds = LayerBounds.fixed(num_layers, bound, scope)
    else:
        bounds = LayerBounds.build(num_layers, bound, layer_bounds, args.pull_bound, scope)
        if args.reliable_pull:
            bounds = bounds.with_reliable_pull()
    send = SendOptions(pace_pps=args.pace_pps, probe_interval=args.probe_ms / 1000.0,
                       peer_timeout=args.peer_timeout,
                       priority_hints=kind == "ltp" and args.priority_hints == "on",
                       plain=kind == "mlt", order=args.order, seed=seed,
                       probe_on_silence=args.probe_on_silence, window=args.window, cc=args.cc,
                       cc_loss=args.cc_loss,
                       delay_target_us=int(args.cc_delay_ms * 1000),
                       mark_depth=args.cc_mark_depth, port_mbps=args.port_mbps)
    mode = args.deadline or ("telemetry" if kind == "ltp" else "fixed")
    pull_ms = args.pull_deadline_ms if args.pull_deadline_ms is not None else args.deadline_ms
    if not (pull_ms > 0 and math.isfinite(pull_ms)):
        raise ConfigError("--pull-deadline-ms must be a positive number")
    common = dict(mode=mode, floor=_ms(args.deadline_floor_ms),
                  ceiling=_ms(args.deadline_ceiling_ms), multiple=args.deadline_mult)
    push_deadline = DeadlineSettings(initial=_ms(args.deadline_ms), **common)
    pull_deadline = NO_DEADLINE if args.reliable_pull else DeadlineSettings(initial=_ms(pull_ms), **common)
    key = {} if args.job_key is None else {"job_key": job_key.load_or_create(args.job_key, create_key)}
    return TransportConfig(
        kind=kind, job_id=args.job, chunk_elems=chunk_elems, chunk_auto=chunk_auto, send=send,
        push_deadline=push_deadline, pull_deadline=pull_deadline,
        peer_timeout=args.peer_timeout, join_timeout=args.join_timeout,
        hole_fill=HoleFill.parse(args.hole_fill or DEFAULT_HOLE_FILL), bounds=bounds, reliable_pull=args.reliable_pull,
        phase_aware=args.phase_aware, phase_high_delta=args.phase_delta,
        phase_check_rounds=args.phase_check_rounds, phase_per_layer=args.phase_per_layer,
        pcn=args.pcn, pcn_threshold=args.pcn_threshold, pcn_timeout=args.pcn_timeout_ms / 1000.0,
        tcp_cc=tcp_cc, tcp_ecn=None if args.tcp_ecn is None else args.tcp_ecn == "on",
        controller=args.controller, packet_mac=mac_mode, ack_delay=args.ack_delay_ms / 1000.0,
        core=transport_core.resolve(getattr(args, "core", None)) if kind != "tcp" else "python",
        io=resolve_io(getattr(args, "io", None)) if kind != "tcp" else "single",
        pull_schedule=pull_schedule, **key)


def following(config: TransportConfig, policy: HostPolicy, flag_hole_fill: HoleFill) -> TransportConfig:
    """``config`` as one generation of the controller's policy makes it: its bounds (the pull
    kept reliable with --reliable-pull), drop-eligible classes, policy epoch stamp, and its
    hole filling when it names one (else ``flag_hole_fill``), and its Early Close law."""
    bounds = policy.bounds.with_scope(config.bounds.scope)
    if config.reliable_pull:
        bounds = bounds.with_reliable_pull()
    send = dataclasses.replace(config.send, policy_epoch=policy.wire_epoch, droppable=policy.droppable)
    hole_fill = HoleFill.parse(policy.hole_fill) if policy.hole_fill else flag_hole_fill
    deadlines = {}
    if policy.early_close and config.kind == "ltp":
        for name in ("push_deadline", "pull_deadline"):
            current = getattr(config, name)
            if current.initial != float("inf"):   # a reliable pull keeps no deadline
                deadlines[name] = dataclasses.replace(current, mode=policy.early_close)
    return dataclasses.replace(config, bounds=bounds, send=send, hole_fill=hole_fill, **deadlines)


def with_chunk_plan(config: TransportConfig,
                    layer_sizes: list[int]) -> tuple[TransportConfig, ChunkPlan]:
    """The chunk plan of a model under `config` (after the controller's first policy
    generation, whose push bounds size the default chunks), and `config` recording it."""
    if not config.chunk_auto:
        plan = ChunkPlan(layer_sizes, config.chunk_elems)
        chunking = f"{config.chunk_elems} float32 per DATA packet (--chunk-elems)"
    else:
        sizes = default_chunk_sizes(layer_sizes, config.bounds.push, config.bounds.scope,
                                    config.chunk_elems)
        plan = ChunkPlan(layer_sizes, list(sizes.per_layer))
        chunking = sizes.describe()
    pull = LossBudget.of(config.bounds.pull, plan, config.bounds.scope).total
    deadline = config.pull_deadline
    if pull == 0 and config.udp:
        # a pull that may leave no chunk missing is reliable: a deadline could only close it
        # with a hole, and every such close would be a bound violation
        deadline = NO_DEADLINE
    return dataclasses.replace(config, chunking=chunking, pull_budget_chunks=pull,
                               pull_deadline=deadline), plan


def fingerprint(layer_sizes: list[int], chunk_elems: int | list[int],
                config: TransportConfig) -> int:
    """32-bit digest of what PS and workers must agree on: layer sizes, chunking (ChunkPlan's
    chunking_key), transport, job,
    the pull contract (reliable or bounded) and the bound scope (tensor or per layer)."""
    text = json.dumps([layer_sizes, chunk_elems, config.kind, config.job_id, config.reliable_pull,
                       config.bounds.scope])
    return zlib.crc32(text.encode())
