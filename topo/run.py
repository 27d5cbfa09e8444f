"""`python -m topo.run` (`make run`, `make demo`): start a topology with its controller, then the
Mininet CLI, or (`--demo`) run a short training job, print its summary and tear down.
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from types import FrameType

from mininet.log import setLogLevel

from p4target.switch.errors import OptionError
from p4target.switch.links.impairments import parse_impairment
from controller.network import ECN_DEPTHS
from hosts.errors import ConfigError
from hosts.exchange.config import TRANSPORTS
from hosts.exchange.tcp_options import check_congestion_control
from topo import agents
from topo.errors import TopoError
from topo.session import DEFAULT_POLICY, TWO_JOBS_POLICY, RunConfig, RunSession
from topo.summary import render
from topo.toolchain import SWITCH_LOG_LEVELS, switch_log_files, switch_log_level, switch_log_note
from topo.topologies import TOPOLOGIES, TopoParams

EXIT_FAILED = 1
EXIT_USAGE = 2


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m topo.run", description=__doc__.splitlines()[0])
    p.add_argument("--topo", default="incast", choices=sorted(TOPOLOGIES), help="topology (default incast)")
    p.add_argument("--build", default="build", help="folder with gradlane.json and gradlane.p4info.txtpb")
    p.add_argument("--demo", action="store_true", help="run a short training job non-interactively, then stop")
    p.add_argument("--workers", type=int, default=3, help="worker hosts (default 3)")
    p.add_argument("--background", type=int, default=2, help="background hosts (incast/leaf-spine; default 2)")
    p.add_argument("--rounds", type=int, default=20, help="training rounds of a job (default 20)")
    p.add_argument("--jobs", type=int, default=1,
                   help="host groups (a PS and --workers workers each) sharing the incast "
                        "bottleneck, so jobs can run side by side (CLI `job start`); with more "
                        f"than one and no --policy, {TWO_JOBS_POLICY} (default 1)")
    p.add_argument("--pcap", action="store_true", help="write per-port pcaps to pcaps/")
    p.add_argument("--ecn-depth", choices=ECN_DEPTHS, default="queue",
                   help="what the switches' ports compare their ECN threshold with: the packet's "
                        "own priority queue (default) or the port's occupancy over all its queues")
    p.add_argument("--policy", default=None, help=f"tolerance policy file (default {DEFAULT_POLICY}; with --jobs > 1 "
                        f"{TWO_JOBS_POLICY})")
    p.add_argument("--log-dir", default="logs", help="logs, description and run record (default logs)")
    p.add_argument("--switch-log", choices=SWITCH_LOG_LEVELS, metavar="LEVEL",
                   help="the switches' log level (-L), as $SWITCH_LOG (`make run SWITCH_LOG=debug`); "
                        "default warn: debug and trace log every packet, which slows BMv2 many times over")
    p.add_argument("--bottleneck-pps", type=float, default=1000.0,
                   help="queue rate of the bottleneck port(s), packets/s (default 1000): BMv2's "
                        "per-queue rate, which counts packets whatever their size")
    p.add_argument("--bottleneck-bytes", type=float, default=None, metavar="BYTES_PER_S",
                   help="shape the bottleneck port(s) in bytes/s instead, all priority queues "
                        "together (a packet costs its length, as on a real link); the embedded "
                        "switch only: BMv2 has no byte rate")
    p.add_argument("--queue-depth", type=int, default=64, help="queue depth, packets (default 64; pcn 60)")
    p.add_argument("--delay-ms", type=float, default=0.0, help="bottleneck link delay")
    p.add_argument("--loss-pct", type=float, default=0.0, help="bottleneck link random loss, percent")
    p.add_argument("--burst", action="append", default=[], metavar="START+DURATION@LOSS",
                   help="scheduled loss burst on the bottleneck, e.g. 10s+500ms@0.7 (repeatable)")
    p.add_argument("--background-flows", type=int, default=0, metavar="N",
                   help="N ECN-capable TCP flows from every background host to the sink (default 0)")
    p.add_argument("--no-controller", action="store_true",
                   help="start the network only (switches unprogrammed; for debugging the target)")
    p.add_argument("--timeout", type=float, default=600.0, help="demo job time limit, s (default 600)")
    p.add_argument("--plaintext", action="store_true",
                   help="P4Runtime without TLS (a testbed without PKI; any local user can then program "
                        "the switches). Default: a fresh CA per run, TLS with client certificates, "
                        "certificates in LOG_DIR/pki")
    t = p.add_argument_group("training jobs (every job of the run)")
    t.add_argument("--transport", default="ltp", choices=TRANSPORTS,
                   help="ltp (ours), mlt (software-MLT baseline: one fixed bound, PLAIN packets) "
                        "or tcp (reliable baseline); see python -m hosts.ps --help")
    t.add_argument("--tcp-cc", metavar="NAME",
                   help="tcp: congestion control per socket (as net.ipv4.tcp_available_congestion_control offers)")
    t.add_argument("--tcp-ecn", choices=("on", "off"),
                   help="tcp: ECN on or off (net.ipv4.tcp_ecn = 1 or 0, set in each job host's namespace)")
    t.add_argument("--pace", action="store_true",
                   help="pace every worker of every transport at its fair share of the bottleneck "
                        "(0.9 x --bottleneck-pps / workers; tcp via SO_MAX_PACING_RATE). Default: unpaced")
    t.add_argument("--min-workers", type=int, metavar="N",
                   help="ltp/mlt: the fewest workers a job may shrink to when workers die; below "
                        "it for longer than the agents' --outage-horizon (30 s) the job stops "
                        "(default 1; docs/faults.md)")
    t.add_argument("--ddp", nargs="?", const=agents.DDP_EXAMPLE, metavar="SCRIPT",
                   help="jobs train a PyTorch model with DDP, its gradients through gradlane's hook: "
                        "SCRIPT (default examples/ddp_digits.py) runs once per worker host with "
                        "--steps ROUNDS, the DDP server on the PS host (docs/pytorch.md)")
    t.add_argument("--ddp-model", metavar="MODEL",
                   help="--ddp: the script's --model (the example's: torch-mlp, torch-cnn, resnet, "
                        "transformer; default torch-cnn)")
    t.add_argument("--agent-arg", action="append", default=[], metavar="ARG",
                   help="one more flag for the parameter server and the workers, e.g. "
                        "--agent-arg=--hole-fill=zero (repeatable)")
    return p


def _config(args: argparse.Namespace) -> RunConfig:
    ranges = (("--workers", args.workers, args.workers >= 1, ">= 1"),
              ("--background", args.background, args.background >= 0, ">= 0"),
              ("--rounds", args.rounds, args.rounds >= 1, ">= 1"),
              ("--queue-depth", args.queue_depth, args.queue_depth >= 1, ">= 1"),
              ("--bottleneck-pps", args.bottleneck_pps, 0 < args.bottleneck_pps < float("inf"), "> 0"),
              ("--delay-ms", args.delay_ms, 0 <= args.delay_ms < float("inf"), ">= 0"),
              ("--loss-pct", args.loss_pct, 0 <= args.loss_pct <= 100, "within 0..100"))
    bad = [f"{flag} {value:g} must be {rule}" for flag, value, ok, rule in ranges if not ok]
    if bad:
        raise TopoError("; ".join(bad))
    if args.bottleneck_bytes is not None and not 0 < args.bottleneck_bytes < float("inf"):
        raise TopoError(f"--bottleneck-bytes {args.bottleneck_bytes:g} must be a rate > 0 in bytes/s")
    if args.bottleneck_bytes is not None and args.pace:
        raise TopoError("--pace shares a bottleneck in packets/s: use --bottleneck-pps with it")
    if args.background_flows < 0:
        raise TopoError("--background-flows must be >= 0")
    if args.min_workers is not None and not 1 <= args.min_workers <= args.workers:
        raise TopoError(f"--min-workers {args.min_workers} must be within 1..--workers {args.workers}")
    switch_log_level()  # a bad $SWITCH_LOG is named before anything starts
    if args.demo and args.no_controller:
        raise TopoError("--demo needs the controller (drop --no-controller)")
    for burst in args.burst:
        try:
            parse_impairment(f"1:burst={burst}")
        except OptionError as exc:
            raise TopoError(f"bad --burst '{burst}': {exc}") from None
    if (args.tcp_cc or args.tcp_ecn) and args.transport != "tcp":
        raise TopoError("--tcp-cc and --tcp-ecn need --transport tcp")
    if args.tcp_cc:
        try:
            check_congestion_control(args.tcp_cc)
        except ConfigError as exc:
            raise TopoError(str(exc)) from None
    if args.ddp_model and not args.ddp:
        raise TopoError("--ddp-model needs --ddp")
    if args.ddp and not os.path.isfile(args.ddp):
        raise TopoError(f"--ddp {args.ddp}: no such script")
    agent_args = tuple(args.agent_arg)
    if args.tcp_cc:
        agent_args += ("--tcp-cc", args.tcp_cc)
    if not 1 <= args.jobs <= 8 or (args.jobs > 1 and args.topo != "incast"):
        raise TopoError("--jobs must be 1..8, and more than 1 only with --topo incast")
    params = TopoParams(workers=args.workers, background=args.background, bottleneck_pps=args.bottleneck_pps,
                        bottleneck_bytes=args.bottleneck_bytes, queue_depth=args.queue_depth,
                        delay_ms=args.delay_ms, loss_pct=args.loss_pct, jobs=args.jobs)
    policy = args.policy or (TWO_JOBS_POLICY if args.jobs > 1 else DEFAULT_POLICY)
    return RunConfig(topo_name=args.topo, build_dir=args.build, log_dir=args.log_dir, params=params,
                     policy=policy, pcap=args.pcap, bursts=tuple(args.burst), rounds=args.rounds,
                     controller=not args.no_controller, transport=args.transport, pace=args.pace,
                     tcp_ecn=args.tcp_ecn, agent_args=agent_args, min_workers=args.min_workers,
                     plaintext=args.plaintext, ddp_script=args.ddp and os.path.abspath(args.ddp),
                     ddp_model=args.ddp_model, ecn_depth=args.ecn_depth)


def bottleneck_text(params: TopoParams) -> str:
    """Which bottleneck is in force: bytes/s (a port shaper) or packets/s (BMv2's queue rate)."""
    if params.bottleneck_bytes is not None:
        return f"bottleneck {params.bottleneck_bytes:g} bytes/s (a packet costs its length)"
    return f"bottleneck {params.bottleneck_pps:g} packets/s (every packet costs one, whatever its size)"


def overview(session: RunSession) -> str:
    """What runs where, and how to train from the CLI."""
    topo, cfg = session.topo, session.config
    net = session.network
    assert net is not None
    out = [f"gradlane: topology '{topo.name}': {len(topo.switches)} switches, {len(topo.hosts)} hosts; "
           f"switch {net.tool.describe()}"]
    if session.stale:
        out.append(f"cleaned up a previous run: {', '.join(session.stale)}")
    out.append("switches:")
    for name, sw in topo.switches.items():
        ports = ", ".join(f"{port}={peer}" for port, peer in sorted(topo.ports(name).items()))
        rates = {link.port_of(name): (link.a_queue_rate_pps if link.a == name else link.b_queue_rate_pps)
                 for link in topo.switch_links(name)}
        limited = ", ".join(f"port {p} {r:g} pps" for p, r in sorted(rates.items()) if r)
        byte_rates = ", ".join(f"port {link.port_of(name)} {r:g} bytes/s (port shaper)"
                               for link in topo.switch_links(name)
                               if (r := link.a_byte_rate if link.a == name else link.b_byte_rate))
        limited = ", ".join(x for x in (limited, byte_rates) if x)
        out.append(f"  {name:<4} device {sw.device_id}  gRPC {sw.grpc_addr}  thrift {sw.thrift_port}  "
                   f"pid {net.switch(name).pid_of_process}  log {sw.log}")
        out.append(f"       ports {ports}; queues {sw.priority_queues} x depth {sw.queue_depth}"
                   + (f"; rate {limited}" if limited else ""))
    out.append("hosts:")
    for name, host in topo.hosts.items():
        out.append(f"  {name:<4} {host.ip}/{host.prefix_len:<3} {host.role:<10} on {host.switch} port {host.switch_port}")
    out.append(control_plane_line(session))
    imp = session.impairment_lines or ["none requested"]
    out.append("link impairments: " + "; ".join(imp))
    if session.controller is not None:
        out.append(f"controller: pid {session.controller.pid}, log {session.controller.log}, policy {cfg.policy}")
    else:
        out.append("controller: not started (--no-controller): switches have no table entries")
    out.append(switch_log_note(net.switch(next(iter(topo.switches))).log_level,
                               switch_log_files(f"{cfg.log_dir}/<switch>.log", net.tool)[0]))
    out.append(f"description: {cfg.topology_path}; run record: {cfg.log_dir}/run.pids.json"
               + ("; pcaps in pcaps/" if cfg.pcap else ""))
    return "\n".join(out)


def control_plane_line(session: RunSession) -> str:
    """How the switches' P4Runtime is protected in this run."""
    if session.pki is None:
        return ("control plane: P4Runtime in plaintext (--plaintext): any local user can program the "
                "switches; see docs/security.md")
    return (f"control plane: P4Runtime over TLS, client certificates of this run's CA only "
            f"({session.pki.folder}; --plaintext turns it off)")


CLI_HELP = """\
In the Mininet CLI:
  train [ROUNDS] [WORKERS]   run a training job (PS + workers on the hosts), print its summary
  train --ddp [STEPS] [RANKS]  the same with a PyTorch DDP job through gradlane's hook
  job start [ROUNDS] [WORKERS]  start a job in the background on a free host group (--jobs N
                             gives N), so a second job runs beside the first; `job wait [JOB]`
                             prints its summary, `job list` shows what runs
  stats                      switch counters (gradctl stats)
  background FLOWS | off     ECN-capable TCP flows from the background hosts to the sink
  gradctl ARGS               e.g. `gradctl policy show`, `gradctl policy set ...`
  exit                       stop everything (or `make stop` from another shell)"""


def _raise_exit(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit code."""
    args = _parser().parse_args(argv)
    if args.switch_log:
        os.environ["SWITCH_LOG"] = args.switch_log  # the switches read it as `make run` passes it
    signal.signal(signal.SIGTERM, _raise_exit)
    signal.signal(signal.SIGHUP, _raise_exit)
    setLogLevel("warning")
    session: RunSession | None = None
    try:
        session = RunSession(_config(args))
        print(f"gradlane: starting topology '{args.topo}' ...", flush=True)
        started = time.monotonic()
        session.start()
        print(overview(session), flush=True)
        print(f"ready in {time.monotonic() - started:.1f} s", flush=True)
        if args.background_flows > 0:
            print("background traffic: " + "; ".join(session.start_background(args.background_flows)), flush=True)
        if args.demo:
            share = session.pace_pps(args.workers)
            what = f"DDP steps of {args.ddp} through the hook" if args.ddp else "rounds"
            print(f"demo: training {args.rounds} {what} with {args.workers} workers over {args.transport}, "
                  f"{bottleneck_text(session.config.params)}, "
                  + (f"workers paced at {share:.0f} pps each" if share else "unpaced") + " ...", flush=True)
            result = session.train(rounds=args.rounds, workers=args.workers, timeout=args.timeout)
            faults = session.supervisor.snapshot() if session.supervisor else []
            print(render(result, session.stats(), switch_logs={n: s.log for n, s in session.topo.switches.items()},
                         faults=faults), flush=True)
            return 0 if result.ok else EXIT_FAILED
        from topo.cli import GradCLI  # imports Mininet's CLI (readline) only when interactive
        print(CLI_HELP, flush=True)
        setLogLevel("info")
        GradCLI(session)
        return 0
    except TopoError as exc:
        print(f"topo.run: error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print("topo.run: interrupted", file=sys.stderr)
        return 130
    finally:
        if session is not None and session.stop():
            print("gradlane: stopped", flush=True)


if __name__ == "__main__":
    sys.exit(main())
