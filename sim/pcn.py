"""The PCN experiment (experiments/pcn.py) in ns-3: the same timeline, measured by the same
analysis (`experiments.pcn_measure`), with the simulated switches' telemetry and queue samples.

One repetition: ECN-capable TCP flows from every background sender to `bs` warm up; every
worker sends its bursts of MTU-sized gradient DATA to the PS paced at `burst_pps`, announced by
PCN-START `lead_ms` ahead in the PCN arm; the leaves' uplink queues are sampled every
`sample_ms`. Not simulated: the PS's PCN-ACK (a worker bursts when ready; with a 1 s lead the
ACK would always be in by then), so `acked` is None.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from controller.policy import load_policy
from controller.topology import Topology
from experiments.api import ArmResult
from experiments.config import Arm, ExperimentConfig
from experiments.pcn_measure import PcnSettings, _analyse
from hosts import wire
from sim import tcp
from sim.errors import SimError
from sim.network import SimNetwork, SimOptions

GRADIENT_PORT = 19527
BACKGROUND_PORT = 7000
JOB_ID = 1
SERIES_DIR = "pcn_queues"


def settings_of(cfg: ExperimentConfig, arm: Arm) -> PcnSettings:
    """The repetition's knobs: the arm's params, else the config's, else PcnSettings' defaults."""
    defaults = PcnSettings()
    values = {}
    for name in PcnSettings.__dataclass_fields__:
        value = arm.params.get(name, cfg.params.get(name, getattr(defaults, name)))
        values[name] = type(getattr(defaults, name))(value)
    s = PcnSettings(**values)
    if s.bursts < 1 or s.packets < 1 or s.burst_pps <= 0 or s.sample_ms <= 0:
        raise SimError("pcn: params bursts, packets, burst_pps and sample_ms must be positive")
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


def _received(heads: list[bytes], times: list[float]) -> list[dict[str, Any]]:
    """Per (rank, round): what the emulation's PS records (hosts/pcn.py BurstRecorder)."""
    rows: dict[tuple[int, int], dict[str, Any]] = {}
    for head, t in zip(heads, times):
        h = wire.HEADER.unpack_from(head)
        kind, rank, round_, qdepth, hops, qdelay = h[0] & 0xF, h[3], h[5], h[11], h[12], h[13]
        if kind != wire.KIND_DATA:
            continue
        row = rows.setdefault((rank, round_), {
            "rank": rank, "round": round_, "packets": 0, "bytes": 0, "first_t": t, "start_qdepth": qdepth,
            "max_qdepth": 0, "qdelay_us_sum": 0, "qdelay_us_max": 0, "hops": hops})
        row["packets"] += 1
        row["bytes"] += wire.HEADER_LEN + wire.MAX_DATA_PAYLOAD
        row["last_t"] = t
        row["max_qdepth"] = max(row["max_qdepth"], qdepth)
        row["qdelay_us_sum"] += qdelay
        row["qdelay_us_max"] = max(row["qdelay_us_max"], qdelay)
    for row in rows.values():
        row["qdelay_us_mean"] = row.pop("qdelay_us_sum") / row["packets"]
    return list(rows.values())


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
        start_at = s.warmup_s + lead + 1.0
        end_t = start_at + s.bursts * s.period_s + 1.5
        rx = cpp.DatagramSink(net.node("ps"), GRADIENT_PORT, wire.HEADER_LEN)
        payload = bytes(wire.MAX_DATA_PAYLOAD)
        sent = []
        for rank, host in enumerate(topo.hosts_with_role("worker")):
            tx = cpp.DatagramSender(net.node(host), net.address("ps"), GRADIENT_PORT)
            keep.append(tx)
            for i in range(s.bursts):
                round_, ready = round_base + i, start_at + i * s.period_s
                if pcn:
                    tx.Add(ready - lead, wire.pack_header(wire.KIND_PCN_START, 0, JOB_ID, rank, 0, round_),
                           wire.pcn_tos(start=True, threshold=s.pcn_threshold))
                for seq in range(s.packets):
                    header = wire.pack_header(wire.KIND_DATA, 0, JOB_ID, rank, 0, round_, 0, len(payload),
                                              seq, seq * (len(payload) // 4))
                    tx.Add(ready + seq / s.burst_pps, header + payload, wire.data_tos(0, False))
                sent.append({"round": round_, "rank": rank, "packets": s.packets, "ready_t": ready,
                             "pcn": pcn, "acked": None, "pcn_rtt_ms": None})
        probe = cpp.QueueProbe(s.sample_ms / 1000.0)
        labels = bottlenecks(topo)
        for _, switch, port in labels:
            probe.AddQueue(net.switches[switch].queues[port], 0)
        probe.AddSink(sink_apps.Get(0))
        probe.Start(0.0, end_t)
        net.run(end_t)
        received = _received([bytes(h) for h in rx.heads], [float(t) for t in rx.times])
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
    records, metrics, series = _analyse(s, pcn, sent, received, sink_rows, sampler, topo, start_at, end_t)
    tag = f"{arm.name}-rep{rep}"
    series_path = out_dir / SERIES_DIR / f"{tag}.json"
    series_path.parent.mkdir(parents=True, exist_ok=True)
    series_path.write_text(json.dumps(series))
    rounds = [{**{k: v for k, v in r.items() if k != "delivered_fraction"},
               "delivered": r["delivered_fraction"], "accuracy": None} for r in records]
    ok = metrics["bursts_recorded"] > 0
    tail = {name: c["tail_drops"] for name, c in switches.items()}
    return ArmResult(rounds=rounds, metrics=metrics, ok=ok, error=None if ok else "no burst reached the PS",
                     extra={"pcn": pcn, "queue_series": f"{SERIES_DIR}/{tag}.json", "sim_switches": switches,
                            "tail_drops": tail})
