"""ns-3 backend speed: simulated packets per wall-second and the wall time of one push/pull round
at 10 Gb/s, beside ns-3's own speed in the same run (a bulk TCP transfer over one link, no
gradlane switch). Figures are wall-clock: compare the two rows of one run only.

Round: `--workers` workers push `--params` float32 each to the PS through the incast
topology's two simulated switches (all links `--rate-gbps`), then the PS pulls back as much.
The same round with gradlane's loss-tolerant transport (ltp_incast's `gradlane` arm flags, the
agents' own protocol code driven from Python per packet: sim/lossy.py) moves `--lossy-params`
per worker (default ResNet-50's 25.6 M; 0 skips it). Beside it, in the same run, a smaller
lossy round (`--compare-params`, default 1 M) with this tree's driver and with the driver of
`--before` (a git commit, default the one before the driver's speed-up; '' skips it), run from
that commit's files in a child process: datagrams per wall-second before and after.
Run: .venv/bin/python benchmarks/ns3_sim.py [--params 25000000] [--lossy-params 25557032]
     [--compare-params 1000000] [--before 97ac500] [--workers 8] [--rate-gbps 10]
"""
from __future__ import annotations

import argparse
import io
import re
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from controller.policy import load_policy  # noqa: E402
from experiments import config as configs  # noqa: E402
from experiments.backends.ns3 import harness  # noqa: E402
from sim import engine, tcp  # noqa: E402
from sim.lossy import run_lossy_rounds, transport_config  # noqa: E402
from sim.network import SimNetwork, SimOptions  # noqa: E402
from sim.rounds import run_tcp_rounds  # noqa: E402
from topo.topologies import TopoParams, build_topology  # noqa: E402

SEGMENT = 1448
LAYER_PARAMS = 2_500_000     # the lossy round's gradient is cut into layers of at most this many
RESNET50_PARAMS = 25_557_032
BEFORE_SPEEDUP = "97ac500"   # the last commit whose driver crossed into ns-3 per datagram, ticking every agent
_FIGURES = re.compile(r"([\d.]+) s wall; .*\n\s+([\d,]+) datagrams/wall-s")


def lossy_round(params: int, workers: int, rate_gbps: float) -> None:
    """One push/pull round of ltp_incast's gradlane arm with `params` float32 per worker."""
    arm = configs.load(configs.default_path("ltp_incast")).arm("gradlane")
    sizes = [LAYER_PARAMS] * (params // LAYER_PARAMS) + ([params % LAYER_PARAMS] if params % LAYER_PARAMS else [])
    config = transport_config("ltp", list(arm.agent_args), len(sizes), 360, 1)
    topo = build_topology("incast", TopoParams(workers=workers, background=0, bottleneck_pps=None,
                                               queue_depth=64))
    harness.seed_ns3(1)
    net = SimNetwork(topo, load_policy(ROOT / "controller/policies/default.yaml"),
                     SimOptions(rate_gbps=rate_gbps))
    out = run_lossy_rounds(net, "ps", [f"w{i}" for i in range(1, workers + 1)], config, sizes,
                           rounds=1, limit_s=600, jitter_s=0.0, seed=1)
    net.close()
    if not out.complete:
        raise SystemExit(f"the gradlane round did not finish: {out.error}")
    r = out.rounds[0]
    hops = sum(q["tx"] for sw in out.switches.values() for q in sw["queues"].values())
    print(f"one gradlane round (ltp_incast's gradlane flags), {workers} workers x {params:,} parameters at "
          f"{rate_gbps:g} Gb/s: {(r.end - r.start) * 1e3:.1f} ms simulated, {out.wall_s:.1f} s wall; "
          f"{r.data_packets:,} DATA packets ({r.retransmissions} resent), push delivered >= "
          f"{r.delivered_tensor_min:.3f}")
    print(f"  {out.packets / out.wall_s:,.0f} datagrams/wall-s through the agents' Python code (sent + received), "
          f"{r.data_packets / out.wall_s:,.0f} DATA packets/wall-s end to end, {hops / out.wall_s:,.0f} "
          f"packet-hops/wall-s through the simulated switches")
    if params < RESNET50_PARAMS:
        print(f"  at this speed one round of {workers} x {RESNET50_PARAMS:,} parameters takes about "
              f"{out.wall_s / params * RESNET50_PARAMS / 60:.0f} min of wall time")


def lossy_round_at(ref: str, params: int, workers: int, rate_gbps: float) -> str:
    """`lossy_round` as commit `ref`'s files run it (extracted with git archive, run in a child
    process on the same machine): its printed figures."""
    try:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref], capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        raise SystemExit(f"--before {ref}: git cannot export that commit here (--before '' skips the comparison)") from None
    with tempfile.TemporaryDirectory(prefix="gradlane-before-") as tree:
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(tree)
        code = ("import sys; sys.path.insert(0, '.'); from sim import engine; engine.cpp(); "
                f"from benchmarks.ns3_sim import lossy_round; lossy_round({params}, {workers}, {rate_gbps!r})")
        done = subprocess.run([sys.executable, "-c", code], cwd=tree, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"the lossy round at {ref} failed: {done.stderr.strip().splitlines()[-1:]}")
    return done.stdout


def compare_drivers(ref: str, params: int, workers: int, rate_gbps: float) -> None:
    """The same lossy round with `ref`'s driver and this tree's, one after the other."""
    before = lossy_round_at(ref, params, workers, rate_gbps)
    out = io.StringIO()
    stdout, sys.stdout = sys.stdout, out
    try:
        lossy_round(params, workers, rate_gbps)
    finally:
        sys.stdout = stdout
    figures = []
    for name, text in ((f"before ({ref})", before), ("after (this tree)", out.getvalue())):
        print(f"  {name}: " + text.strip().splitlines()[0])
        found = _FIGURES.search(text)
        if found is None:
            raise SystemExit(f"no figures in the {name} round's output: {text!r}")
        figures.append((float(found.group(1)), int(found.group(2).replace(",", ""))))
    (wall0, rate0), (wall1, rate1) = figures
    print(f"  the driver, {workers} x {params:,} parameters: {rate0:,} -> {rate1:,} datagrams/wall-s through "
          f"the agents' code, {wall0:.1f} -> {wall1:.1f} s wall ({wall0 / wall1:.2f}x)")


def bare_link(total_bytes: int, rate_gbps: float) -> tuple[float, float]:
    """ns-3 alone, with its own TCP defaults (1448-byte segments): (wall s, simulated s) of one
    BulkSend of `total_bytes` over one link. Run before `tcp.configure`, whose defaults stay."""
    ns = engine.ns3()
    ns.Config.SetDefault("ns3::TcpSocket::SegmentSize", ns.UintegerValue(SEGMENT))
    nodes = ns.NodeContainer()
    nodes.Create(2)
    p2p = ns.PointToPointHelper()
    p2p.SetDeviceAttribute("DataRate", ns.StringValue(f"{rate_gbps}Gbps"))
    p2p.SetChannelAttribute("Delay", ns.StringValue("1us"))
    devices = p2p.Install(nodes)
    ns.InternetStackHelper().Install(nodes)
    addr = ns.Ipv4AddressHelper()
    addr.SetBase(ns.Ipv4Address("10.1.1.0"), ns.Ipv4Mask("255.255.255.0"))
    interfaces = addr.Assign(devices)
    sink = ns.PacketSinkHelper("ns3::TcpSocketFactory",
                               ns.InetSocketAddress(ns.Ipv4Address.GetAny(), 9).ConvertTo())
    sink_apps = sink.Install(nodes.Get(1))
    bulk = ns.BulkSendHelper("ns3::TcpSocketFactory", ns.InetSocketAddress(interfaces.GetAddress(1), 9).ConvertTo())
    bulk.SetAttribute("MaxBytes", ns.UintegerValue(total_bytes))
    bulk.Install(nodes.Get(0))
    sink_apps.Start(ns.Seconds(0))
    t0 = time.monotonic()
    ns.Simulator.Stop(ns.Seconds(600))
    ns.Simulator.Run()
    wall = time.monotonic() - t0
    got = sink_apps.Get(0).GetObject[ns.PacketSink]().GetTotalRx()
    ns.Simulator.Destroy()
    if got != total_bytes:
        raise SystemExit(f"bare link moved {got} of {total_bytes} bytes")
    return wall, total_bytes * 8 / (rate_gbps * 1e9)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--params", type=int, default=25_000_000, help="float32 parameters per worker")
    p.add_argument("--workers", type=int, default=8)
    p.add_argument("--rate-gbps", type=float, default=10.0)
    p.add_argument("--lossy-params", type=int, default=RESNET50_PARAMS,
                   help="float32 parameters per worker of the gradlane round (0: skip it)")
    p.add_argument("--compare-params", type=int, default=1_000_000,
                   help="float32 parameters per worker of the before/after gradlane round (0: skip it)")
    p.add_argument("--before", default=BEFORE_SPEEDUP,
                   help="git commit whose lossy driver runs the comparison round ('': skip it)")
    args = p.parse_args()
    t0 = time.monotonic()
    engine.cpp()
    print(f"ns-3 import + gradlane C++ compile: {time.monotonic() - t0:.1f} s")
    grad = 4 * args.params
    bare_bytes = min(grad * args.workers, 1_000_000_000)
    bare_wall, bare_simulated = bare_link(bare_bytes, args.rate_gbps)
    tcp.configure(tcp.TcpSettings(cc="cubic"))
    topo = build_topology("incast", TopoParams(workers=args.workers, background=0, bottleneck_pps=None,
                                               queue_depth=64))
    t0 = time.monotonic()
    net = SimNetwork(topo, load_policy(ROOT / "controller/policies/default.yaml"),
                     SimOptions(rate_gbps=args.rate_gbps))
    build = time.monotonic() - t0
    workers = [f"w{i}" for i in range(1, args.workers + 1)]
    out = run_tcp_rounds(net, "ps", workers, grad, grad, rounds=1, limit_s=600)
    net.close()
    if not out.complete:
        print("the round did not finish within 600 s of simulated time")
        return 1
    hops = sum(q["tx"] for sw in out.switches.values() for q in sw["queues"].values())
    data_packets = 2 * args.workers * grad / SEGMENT
    round_s = out.ends[0] - out.starts[0]
    print(f"one round, {args.workers} workers x {args.params:,} parameters ({grad / 1e6:.0f} MB push + pull "
          f"each) at {args.rate_gbps:g} Gb/s: {round_s * 1e3:.1f} ms simulated, {out.wall_s:.1f} s wall "
          f"(+{build:.1f} s to build the network)")
    print(f"  gradlane switches: {hops / out.wall_s:,.0f} packet-hops/wall-s through the simulated switches, "
          f"{data_packets / out.wall_s:,.0f} data segments/wall-s end to end")
    print(f"  baseline, ns-3 alone (BulkSend, one link, {bare_bytes / 1e6:.0f} MB, ns-3's TCP defaults): "
          f"{bare_bytes / SEGMENT / bare_wall:,.0f} data segments/wall-s, {bare_simulated * 1e3:.1f} ms "
          f"simulated in {bare_wall:.1f} s wall")
    if args.compare_params > 0 and args.before:
        print("the loss-tolerant driver before and after, same gradlane round, one after the other:")
        compare_drivers(args.before, args.compare_params, args.workers, args.rate_gbps)
    if args.lossy_params > 0:
        lossy_round(args.lossy_params, args.workers, args.rate_gbps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
