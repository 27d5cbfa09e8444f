"""The PCN experiment (experiments/pcn.py) in ns-3: the same timeline, measured by the same
analysis (`experiments.pcn_measure.analyse`), with the simulated switches' queue samples.

One repetition of a TCP arm: ECN-capable TCP flows from every background sender to `bs` warm
up; every worker keeps one ECN TCP connection (ns-3's TcpCubic for `tcp_cc` cubic) to the PS
and sends its bursts of `burst_bytes` on it (`TcpBursts`), each announced by a PCN-START
datagram `lead_ms` ahead in the PCN arm, each done when every byte is acknowledged; the
switches tell a burst's arrival by the policy's `ddl_flows`, as the emulated ones do; the
leaves' uplink queues are sampled every `sample_ms`. Not simulated: the PS's PCN-ACK (a worker
bursts when ready; with a 1 s lead the ACK would always be in by then), so `acked` is None; the
gradlane transport's arms (the harness skips them); Linux's restart from the initial window
after an idle period (ns-3's TCP keeps its window across the gaps between bursts).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from controller.policy import load_policy
from controller.topology import Topology
from experiments.api import ArmResult
from experiments.backends.ns3.simulation import SimulatedRun, Simulation
from experiments.config import Arm, ExperimentConfig
from experiments.pcn_measure import DDL_TCP_PORT, PcnSettings, analyse, worker_uplinks
from hosts import wire
from sim import tcp
from sim.errors import SimError
from sim.network import SimNetwork, SimOptions

GRADIENT_PORT = 19527
BACKGROUND_PORT = 7000
JOB_ID = 1
SERIES_DIR = "pcn_queues"
ACK_POLL_PER_SAMPLE = 40      # a burst's end is checked 40 times per queue sample (0.5 ms at 20 ms)
SIMULATED_TRANSPORTS = ("tcp",)


def settings_of(cfg: ExperimentConfig, arm: Arm) -> PcnSettings:
    """The repetition's knobs: the arm's params, else the config's, else PcnSettings' defaults."""
    defaults = PcnSettings()
    values = {}
    for name in PcnSettings.__dataclass_fields__:
        value = arm.params.get(name, cfg.params.get(name, getattr(defaults, name)))
        values[name] = type(getattr(defaults, name))(value)
    s = PcnSettings(**values)
    if s.bursts < 1 or s.burst_bytes < 1 or s.period_s <= 0 or s.sample_ms <= 0:
        raise SimError("pcn: params bursts, burst_bytes, period_s and sample_ms must be positive")
    if s.transport not in SIMULATED_TRANSPORTS:
        raise SimError(f"pcn: DDL transport {s.transport!r} is not simulated (only {', '.join(SIMULATED_TRANSPORTS)})")
    if s.tcp_cc not in tcp.CONGESTION_CONTROLS:
        raise SimError(f"pcn: tcp_cc {s.tcp_cc!r} is not one of ns-3's congestion controls")
    return s


@dataclass
class _Label:
    label: str


@dataclass
class SampledQueues:
    """The queue samples in the form `experiments.pcn_measure` reads (its QueueSampler's)."""

    queues: list[_Label]
    samples: list[tuple[float, str, int]] = field(default_factory=list)
    errors: int = 0

    def series(self, label: str, since: float = 0.0, until: float = float("inf")) -> list[tuple[float, int]]:
        return [(t, d) for t, lab, d in self.samples if lab == label and since <= t <= until]


def bottlenecks(topo: Topology) -> list[tuple[str, str, int]]:
    """(label, switch, port) of each rate-limited egress queue (each leaf's uplink)."""
    return [(f"{link.a}->{link.b}", link.a, link.a_port) for link in topo.links
            if link.a_queue_rate_pps and link.a_port is not None]


def run_arm(cfg: ExperimentConfig, arm: Arm, rep: int, topo: Topology, out_dir: Path,
            options: SimOptions = SimOptions()) -> ArmResult:
    """One repetition of a PCN arm (params.pcn true or false)."""
    s = settings_of(cfg, arm)
    pcn = bool(arm.params.get("pcn", cfg.params.get("pcn", False)))
    arm_index = [a.name for a in cfg.arms].index(arm.name)
    round_base = 1 + 1000 * rep + 100 * arm_index
    policy = load_policy(cfg.topology_of(arm).policy or "controller/policies/default.yaml")
    tcp.configure(tcp.TcpSettings(cc=s.cc, ecn=True))
    net = SimNetwork(topo, policy, options)
    ns, cpp = net.ns, net.cpp
    try:
        sink_apps = ns.PacketSinkHelper("ns3::TcpSocketFactory", ns.InetSocketAddress(
            ns.Ipv4Address.GetAny(), BACKGROUND_PORT).ConvertTo()).Install(net.node("bs"))
        senders = [h for h in topo.hosts_with_role("background") if h != "bs"]
        keep: list[Any] = [sink_apps]
        for host in senders:
            bulk = ns.BulkSendHelper("ns3::TcpSocketFactory", ns.InetSocketAddress(
                net.address("bs"), BACKGROUND_PORT).ConvertTo())
            for _ in range(s.flows_per_host):
                keep.append(bulk.Install(net.node(host)))
        lead = s.lead_ms / 1000.0
        # the emulation's first burst is ready 1 s + lead after the warm-up; here lead + lead, the same
        # at its 1 s lead and in scale at any other
        start_at = s.warmup_s + 2 * lead
        end_t = start_at + s.bursts * s.period_s + s.burst_timeout_s
        bursts = []
        plan = []
        for rank, host in enumerate(topo.hosts_with_role("worker")):
            app = cpp.TcpBursts(net.node(host), net.node("ps"), net.address("ps"), DDL_TCP_PORT,
                                tcp.CONGESTION_CONTROLS[s.tcp_cc],
                                s.sample_ms / 1000.0 / ACK_POLL_PER_SAMPLE)
            tx = cpp.DatagramSender(net.node(host), net.address("ps"), GRADIENT_PORT)
            keep += [app, tx]
            for i in range(s.bursts):
                round_, ready = round_base + i, start_at + i * s.period_s
                if pcn:
                    tx.Add(ready - lead, wire.pack_header(wire.KIND_PCN_START, 0, JOB_ID, rank, 0, round_),
                           wire.pcn_tos(start=True, threshold=s.pcn_threshold))
                app.Add(ready, s.burst_bytes)
                plan.append((rank, i, round_, ready))
            app.Start(s.warmup_s)
            bursts.append(app)
        probe = cpp.QueueProbe(s.sample_ms / 1000.0)
        labels = bottlenecks(topo)
        for _, switch, port in labels:
            probe.AddQueue(net.switches[switch].queues[port], 0)
        probe.AddSink(sink_apps.Get(0))
        probe.Start(0.0, end_t)
        net.run(end_t)
        sent = []
        for rank, i, round_, ready in plan:
            app = bursts[rank]
            if i >= len(app.done):
                continue      # not acknowledged by the end of the simulation
            first, done = float(app.first[i]), float(app.done[i])
            sent.append({"round": round_, "rank": rank, "bytes": s.burst_bytes, "ready_t": ready,
                         "first_t": first, "done_t": done, "completion_s": done - ready,
                         "late_s": max(0.0, first - ready), "pcn": pcn, "acked": None, "pcn_rtt_ms": None})
        times = [float(t) for t in probe.times]
        depths = [int(d) for d in probe.depths]
        sampler = SampledQueues([_Label(lab) for lab, _, _ in labels])
        for i, t in enumerate(times):
            for j, (lab, _, _) in enumerate(labels):
                sampler.samples.append((t, lab, depths[i * len(labels) + j]))
        sink_rows = [{"t": t, "bytes_by_peer": {"all": int(b)}} for t, b in zip(times, probe.sink_bytes)]
        switches = {name: sw.counters() for name, sw in net.switches.items()}
    finally:
        net.close()
    rate = next((link.a_queue_rate_pps for link in topo.links if link.a_queue_rate_pps), None)
    # the background window: the first START's lead before the first burst to as long after the last
    last = max((r["done_t"] for r in sent), default=end_t)
    records, metrics, series = analyse(s, pcn, sent, [], sink_rows, sampler,
                                       worker_uplinks(topo, sampler.queues), start_at, min(last + lead, end_t), rate)
    tag = f"{arm.name}-rep{rep}"
    series_path = out_dir / SERIES_DIR / f"{tag}.json"
    series_path.parent.mkdir(parents=True, exist_ok=True)
    series_path.write_text(json.dumps(series))
    rounds = [{**{k: v for k, v in r.items() if k != "delivered_fraction"},
               "delivered": r["delivered_fraction"], "accuracy": None} for r in records]
    ok = metrics["bursts_recorded"] == len(plan)
    tail = {name: c["tail_drops"] for name, c in switches.items()}
    return ArmResult(rounds=rounds, metrics=metrics, ok=ok,
                     error=None if ok else f"{len(plan) - len(sent)} burst(s) not acknowledged by the end",
                     extra={"pcn": pcn, "transport": s.transport, "queue_series": f"{SERIES_DIR}/{tag}.json", "sim_switches": switches,
                            "tail_drops": tail})


def supported(cfg: ExperimentConfig, arm: Arm) -> str | None:
    """Why `arm` cannot be simulated (None: it can): only ns-3's TCP carries the DDL bursts."""
    ddl = arm.params.get("transport", cfg.params.get("transport", PcnSettings.transport))
    if ddl not in SIMULATED_TRANSPORTS:
        return f"DDL transport {ddl} is not simulated yet (only ns-3's TCP)"
    return None


def simulate(run: SimulatedRun) -> ArmResult:
    """`run_arm` for the harness."""
    return run_arm(run.config, run.arm, run.rep, run.topo, run.out_dir, run.options)


SIMULATION = Simulation(run_arm=simulate, supported=supported, jitter=False)
