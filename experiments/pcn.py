"""Experiment 5, PCN (Sensors 21(1):174, 2021): a worker announces its push burst with PCN-START,
switches on the path lower their ECN marking threshold (40 -> 10 packets) until the burst
arrives, so ECN-capable background TCP backs off and the burst meets a short queue.

The paper's tree (topo `pcn`: root r1 with the PS and the TCP sink, leaves l1/l2 each with one
worker and three background hosts, queues of 60 packets), one ECN Reno flow per background host
(3 per leaf), 6 bursts of a fixed byte count from both workers at once, over a reliable
ECN-reactive DDL transport: kernel TCP (cubic with ECN; the switches know its flows from the
policy's `ddl_flows`) or gradlane's UDP sender (`--cc ecn`). Arms: PCN on / off per transport,
same timeline. The six figures: queue when a burst starts, max queue during a burst, burst
completion time (until every byte is acknowledged), DDL throughput, queueing delay during the
burst, background TCP throughput; plus the queue over time (Thrift samples of the leaves'
uplink queues). Measurement: experiments/pcn_measure.py.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from experiments import plots
from experiments.api import ArmContext, ArmResult, Figure, Row, Summary, Table
from experiments.backends.ns3.simulation import Simulation
from experiments.config import ExperimentConfig
from experiments.errors import ExperimentError
from controller.errors import PolicyError
from controller.policy import load_policy
from experiments.pcn_measure import TRANSPORTS, AgentFailed, PcnSettings, run_repetition
from experiments.queue_sampler import SamplerError
from experiments.records import Results
from experiments.stats import Stat, fmt_num
from experiments.stats import summarize as stat_of

ORDER = 5
TITLE = "PCN: proactive ECN threshold before DDL bursts"
PAPER = "PCN, Sensors 21(1):174, 2021: BMv2 tree, 3 ECN TCP flows per leaf, queue 60, thresholds 40/10"

# (figure key, metric, paper's no-PCN value, paper's PCN value or change, kind)
FIGURES = [
    Figure("start_queue", "queue length when a burst starts (packets), no PCN -> PCN", "35 -> 5 (1/7)",
           "packets", "last 20 ms sample of the worker's leaf uplink before its first byte; our bar: PCN <= 1/5"),
    Figure("max_queue_in_burst", "max queue during a burst (packets), no PCN -> PCN", "54.8 -> 44.1",
           "packets", "largest sample of the worker's uplink until every byte was acknowledged"),
    Figure("burst_completion", "burst completion time, PCN vs no PCN", "-39%", "%",
           "burst ready -> every byte acknowledged at the worker"),
    Figure("ddl_throughput", "DDL (burst) throughput, PCN vs no PCN", "+72%", "%",
           "burst bytes / completion time"),
    Figure("queueing_delay", "queueing delay during a burst, PCN vs no PCN", "-13%", "%",
           "mean sampled queue at the worker's uplink while its burst runs / uplink rate"),
    Figure("background_throughput", "background TCP throughput, PCN vs no PCN", "-5.7%", "%",
           "bytes at the TCP sink from the first PCN-START to the end of the last burst"),
]

_METRIC = {"start_queue": "start_queue_pkts", "max_queue_in_burst": "max_queue_in_burst_pkts",
           "burst_completion": "burst_completion_s", "ddl_throughput": "ddl_throughput_mbps",
           "queueing_delay": "queueing_delay_ms", "background_throughput": "background_throughput_mbps"}
_UNIT = {"start_queue_pkts": "pkts", "max_queue_in_burst_pkts": "pkts", "burst_completion_s": "s",
         "ddl_throughput_mbps": "Mb/s", "queueing_delay_ms": "ms", "background_throughput_mbps": "Mb/s"}
SERIES_DIR = "pcn_queues"


# -- one run ----------------------------------------------------------------------------------
def settings_of(ctx: ArmContext) -> PcnSettings:
    """The repetition's knobs from the config's (and the arm's) params."""
    defaults = PcnSettings()
    values: dict[str, Any] = {}
    for name in PcnSettings.__dataclass_fields__:
        value = ctx.param(name, getattr(defaults, name))
        values[name] = type(getattr(defaults, name))(value)
    s = PcnSettings(**values)
    if s.bursts < 1 or s.burst_bytes < 1 or s.period_s <= 0 or s.sample_ms <= 0:
        raise ExperimentError("pcn: params bursts, burst_bytes, period_s and sample_ms must be positive")
    if s.transport not in TRANSPORTS:
        raise ExperimentError(f"pcn: params.transport {s.transport!r} is not one of {', '.join(TRANSPORTS)}")
    if s.pcn_threshold % 5 or not 0 <= s.pcn_threshold <= 75:
        raise ExperimentError(f"pcn: params.pcn_threshold {s.pcn_threshold} is not a multiple of 5 in 0..75")
    return s


def check_ddl_flows(ctx: ArmContext) -> None:
    """The TCP transport needs the policy to name each worker's DDL flow with its rank (the
    switches tell its bursts' arrival by them): ExperimentError naming the first one missing."""
    path = ctx.config.topology_of(ctx.arm).policy
    try:
        policy = load_policy(path) if path else None
    except PolicyError as exc:
        raise ExperimentError(f"pcn: {exc}") from None
    flows = {(f.src, f.worker_rank) for j in (policy.jobs if policy else ()) for f in j.ddl_flows}
    topo = ctx.session.topo
    for rank, host in enumerate(topo.hosts_with_role("worker")):
        ip = int.from_bytes(bytes(int(x) for x in topo.hosts[host].ip.split(".")), "big")
        if ((ip, 32), rank) not in flows:
            raise ExperimentError(f"pcn: policy {path} names no ddl_flows entry for worker {host} "
                                  f"(src {topo.hosts[host].ip}, worker_rank {rank}): the switches "
                                  "would not see its TCP bursts arrive")


def run_arm(ctx: ArmContext) -> ArmResult:
    """One repetition: warm-up of the background flows, then the bursts of every worker."""
    settings = settings_of(ctx)
    if settings.transport == "tcp":
        check_ddl_flows(ctx)
    pcn = bool(ctx.param("pcn", False))
    arm_index = [a.name for a in ctx.config.arms].index(ctx.arm.name)
    # distinct rounds per run: switches count a START once per (port, job, worker, round)
    round_base = 1 + 1000 * ctx.rep + 100 * arm_index
    tag = f"{ctx.arm.name}-rep{ctx.rep}"
    ctx.progress(f"{settings.warmup_s:g} s warm-up, then {settings.bursts} {settings.transport} "
                 f"bursts every {settings.period_s:g} s ({'PCN' if pcn else 'no PCN'})")
    try:
        records, metrics, series = run_repetition(ctx.session, settings, pcn,
                                                  ctx.out_dir / "logs" / tag, tag, round_base)
    except SamplerError as exc:
        return ArmResult(rounds=[], metrics={}, ok=False, error=f"queue sampling failed: {exc}")
    except AgentFailed as exc:
        return ArmResult(rounds=[], metrics={}, ok=False, error=str(exc))
    series_path = ctx.out_dir / SERIES_DIR / f"{tag}.json"
    series_path.parent.mkdir(parents=True, exist_ok=True)
    series_path.write_text(json.dumps(series))
    rounds = [{**{k: v for k, v in r.items() if k != "delivered_fraction"},
               "delivered": r["delivered_fraction"], "accuracy": None} for r in records]
    ok = metrics["bursts_recorded"] > 0
    return ArmResult(rounds=rounds, metrics=metrics, ok=ok,
                     error=None if ok else "no burst was acknowledged",
                     extra={"pcn": pcn, "transport": settings.transport,
                            "queue_series": f"{SERIES_DIR}/{tag}.json"})


# -- summary ----------------------------------------------------------------------------------
TRANSPORT_NAMES = {"tcp": "TCP", "gradlane": "gradlane UDP"}


def _param(config: ExperimentConfig, arm_name: str, key: str, default: Any) -> Any:
    arm = next(a for a in config.arms if a.name == arm_name)
    return arm.params.get(key, config.params.get(key, default))


def _pairs(results: Results, config: ExperimentConfig) -> list[tuple[str, str | None, str | None]]:
    """Per DDL transport with a finished arm, in TRANSPORTS order: (transport, no-PCN arm, PCN arm)."""
    found: dict[str, list[str | None]] = {}
    for arm in config.arms:
        if arm.name not in results.arms():
            continue
        pair = found.setdefault(_param(config, arm.name, "transport", PcnSettings.transport), [None, None])
        slot = 1 if _param(config, arm.name, "pcn", False) else 0
        pair[slot] = pair[slot] or arm.name
    return [(t, *found[t]) for t in TRANSPORTS if t in found]


def _arms(results: Results, config: ExperimentConfig) -> list[str]:
    """Every finished arm, no-PCN before PCN, per transport."""
    return [a for _, off, on in _pairs(results, config) for a in (off, on) if a]


def _paired_change(results: Results, off: str, on: str, key: str) -> Stat:
    """Per repetition: 100 x (PCN - no PCN) / no PCN."""
    a = {r["rep"]: r["metrics"].get(key) for r in results.runs_of(off)}
    b = {r["rep"]: r["metrics"].get(key) for r in results.runs_of(on)}
    return stat_of(100.0 * (b[k] - a[k]) / a[k] for k in a
                   if k in b and a[k] not in (None, 0) and b[k] is not None)


def _mean_of(results: Results, arm: str, key: str) -> float | None:
    stat = stat_of(results.metric(arm, key))
    return stat.mean if stat.n else None


def _measured(results: Results, transport: str, off: str, on: str, threshold: int) -> str:
    """What the runs measured that bears on the bar: the queue PCN left before the burst
    against its threshold, the queue during the burst, and what the DDL sender did."""
    def num(arm: str, key: str) -> str:
        value = _mean_of(results, arm, key)
        return "n/a" if value is None else fmt_num(value, 3)

    parts = [f"start queue with PCN {num(on, 'start_queue_pkts')} packets (PCN threshold {threshold}), "
             f"without {num(off, 'start_queue_pkts')}",
             f"mean queueing delay during a burst {num(off, 'queueing_delay_ms')} -> "
             f"{num(on, 'queueing_delay_ms')} ms",
             f"retransmissions per burst {num(off, 'ddl_retransmissions')} -> {num(on, 'ddl_retransmissions')}"]
    if transport == "gradlane":
        parts.append(f"window cuts per burst on marks/delay {num(off, 'ddl_mark_cuts')} -> "
                     f"{num(on, 'ddl_mark_cuts')}, on loss {num(off, 'ddl_loss_cuts')} -> {num(on, 'ddl_loss_cuts')}")
    return f"Measured, DDL over {TRANSPORT_NAMES[transport]} (no PCN -> PCN): " + "; ".join(parts) + "."


def _verdict(results: Results, transport: str, off: str, on: str, threshold: int) -> str:
    """Whether the bar holds for one transport (start queue <= 1/5, completion
    shorter), and where it does not, the measured cause."""
    a = stat_of(results.metric(off, "start_queue_pkts"))
    b = stat_of(results.metric(on, "start_queue_pkts"))
    change = _paired_change(results, off, on, "burst_completion_s")
    ratio_ok = bool(a.n and b.n and a.mean > 0 and b.mean <= a.mean / 5)
    # shorter: the paired change is negative by more than its spread over repetitions
    shorter = change.n > 0 and change.mean + (change.sd if change.n > 1 else 0.0) < 0
    ratio = f"1/{fmt_num(a.mean / b.mean, 2)}" if a.n and b.n and b.mean else "n/a"
    text = (f"Bar, DDL over {TRANSPORT_NAMES[transport]}: start queue {ratio} "
            f"({'meets' if ratio_ok else 'misses'} <= 1/5")
    if not ratio_ok and a.n and b.n:
        text += (f"; cause, measured: 1/5 needs <= {fmt_num(a.mean / 5, 3)} packets, and with PCN the "
                 f"queue before a burst was {b.fmt(3)}, the ECN background's sawtooth under the lowered "
                 f"threshold of {threshold}, against {fmt_num(a.mean, 3)} under the normal one")
    text += f"); burst completion {change.fmt(3, '%')} ({'shorter' if shorter else 'not shorter beyond its sd'}"
    if not shorter and change.n:
        retx = _mean_of(results, on, "ddl_retransmissions")
        loss = _mean_of(results, on, "ddl_loss_cuts")
        text += "; cause, measured: see the line below"
        if loss is not None:
            text += (f" (with PCN the sender still halved its window on inferred loss "
                     f"{fmt_num(loss, 3)} times per burst while resending {fmt_num(retx or 0, 3)} chunks)")
    return text + ")."


def summarize(results: Results, config: ExperimentConfig) -> Summary:
    """The six figures (no PCN vs PCN) per DDL transport, a per-arm table and notes."""
    pairs = _pairs(results, config)
    flag = results.switch_dropped()
    rows: list[Row] = []
    for fig in FIGURES:
        key = _METRIC[fig.key]
        if not any(off and on for _, off, on in pairs):
            rows.append(Row(fig.key, "n/a", "no transport has both arms finished", flag))
            continue
        for transport, off, on in pairs:
            name = TRANSPORT_NAMES[transport]
            if not (off and on):
                rows.append(Row(fig.key, f"{name}: n/a", "an arm has no finished run", flag))
                continue
            a, b = stat_of(results.metric(off, key)), stat_of(results.metric(on, key))
            unit = _UNIT[key]
            if fig.unit == "packets":
                ratio = b.mean / a.mean if a.n and b.n and a.mean else float("nan")
                text = (f"{name}: {fmt_num(a.mean, 3)} -> {fmt_num(b.mean, 3)} "
                        f"(1/{fmt_num(1 / ratio, 2) if ratio else 'inf'})")
                rows.append(Row(fig.key, text, f"per run: no PCN {a.fmt(3)}, PCN {b.fmt(3)}", flag))
            else:
                change = _paired_change(results, off, on, key)
                note = f"no PCN {a.fmt(3, unit)}, PCN {b.fmt(3, unit)}; change paired by repetition"
                rows.append(Row(fig.key, f"{name}: {change.fmt(3, '%')}", note, flag))
    p = config.params
    table_rows = []
    for transport, off, on in pairs:
        for arm in (off, on):
            if arm is None:
                continue
            runs_all = [r for r in results.runs if r["arm"] == arm]
            table_rows.append([arm, TRANSPORT_NAMES[transport], f"{len(results.runs_of(arm))}/{len(runs_all)}",
                               *[stat_of(results.metric(arm, k)).fmt(3) for k in _UNIT],
                               stat_of(results.metric(arm, "ddl_retransmissions")).fmt(3),
                               f"{stat_of(results.metric(arm, 'ddl_mark_cuts')).fmt(3)} / "
                               f"{stat_of(results.metric(arm, 'ddl_loss_cuts')).fmt(3)}",
                               stat_of(results.metric(arm, "late_bursts")).fmt(3)])
    threshold = int(p.get("pcn_threshold", PcnSettings.pcn_threshold))
    notes = [line for t, off, on in pairs if off and on
             for line in (_verdict(results, t, off, on, threshold), _measured(results, t, off, on, threshold))]
    if p.get("backend") == "ns3":
        tcp_note = (f"TCP: ns-3's {p.get('tcp_cc', 'cubic')} with ECN, one connection per worker kept for all "
                    "bursts; unlike Linux, ns-3's TCP keeps its window across the idle gaps between "
                    "bursts (no restart from the initial window). Arms not simulated: "
                    + ("; ".join(p.get("skipped_arms") or []) or "none") + ".")
    else:
        tcp_note = ("TCP: one connection per worker kept for all bursts, "
                    f"{p.get('tcp_cc', 'cubic')} with ECN (net.ipv4.tcp_ecn=1 in the worker's namespace; "
                    "DCTCP is not in this kernel), idle between bursts, so each burst restarts from the "
                    "initial window (tcp_slow_start_after_idle); the switches know its flows from the "
                    "policy's ddl_flows.")
    notes += [
        f"Network: the paper's tree, leaf uplinks {config.topology.bottleneck_pps:g} packets/s with a "
        f"{config.topology.queue_depth}-packet queue and {config.topology.delay_ms:g} ms delay; ECN "
        f"thresholds 40 (normal) / {p.get('pcn_threshold', 10)} (PCN); one ECN Reno flow per background "
        "host (3 per leaf).",
        f"DDL traffic: both workers at once, {p.get('bursts', 6)} bursts of {p.get('burst_bytes')} bytes, "
        f"one every {p.get('period_s'):g} s; PCN-START {p.get('lead_ms'):g} ms before each burst is ready "
        "(the same timeline without START in the no-PCN arms). A burst is complete when every byte is "
        f"acknowledged. {tcp_note} gradlane UDP: our sender, initial window {p.get('window', 10)}, --cc "
        f"{p.get('gradlane_cc', 'ecn')} (reacts to CE marks and to a telemetry queueing delay above "
        f"{p.get('cc_delay_ms', 40):g} ms), every chunk CRITICAL (reliable, ECN-capable).",
        "Queue figures are 20 ms Thrift samples of qdepth_reg (depth at dequeue) of the worker's own "
        "leaf uplink, for both transports alike; queueing delay = mean sampled queue during the burst "
        "/ uplink rate. Background throughput: bytes at the TCP sink from the first PCN-START lead to "
        "the end of the last burst.",
    ]
    return Summary(rows=rows, tables=[Table(
        "Per arm (mean ± sd over repetitions; each run averages every burst of both workers)",
        ["arm", "DDL transport", "runs ok", "start queue", "max queue in burst", "burst completion",
         "DDL throughput", "queueing delay", "background throughput", "DDL retransmissions",
         "window cuts, marks / loss (gradlane)", "late bursts"], table_rows)], notes=notes)


# -- plots ------------------------------------------------------------------------------------
def _series(results: Results, out_dir: Path, arm: str) -> dict[str, Any] | None:
    for run in results.runs_of(arm):
        rel = run.get("queue_series")
        for base in (out_dir, Path(run.get("results_dir", out_dir))):
            path = base / rel if rel else None
            if path is not None and path.is_file():
                return json.loads(path.read_text())
    return None


def _queue_plot(data: dict[str, dict[str, Any]], path: Path, window: tuple[float, float]) -> Path:
    """Top: each arm's leaf-uplink queues over the whole run; bottom: every burst overlaid,
    aligned on the moment it was ready (start queue and in-burst maximum)."""
    plt = plots.plt
    arms = list(data)
    fig, axes = plt.subplots(len(arms) + 1, 1, figsize=(8, 2.4 * (len(arms) + 1)))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, arm in zip(axes, arms):
        for i, (label, pts) in enumerate(sorted(data[arm]["queues"].items())):
            if pts:
                xs, ys = zip(*pts)
                ax.plot(xs, ys, linewidth=0.7, color=colours[i % len(colours)], label=label)
        for x in data[arm].get("ready_s", []):
            ax.axvline(x, color="black", linestyle=":", linewidth=0.8)
        ax.axhline(40, color="grey", linestyle="--", linewidth=0.8)
        ax.set_title(f"{arm}: leaf uplink queues (dotted: burst ready)", fontsize=9)
        ax.set_ylabel("packets")
        ax.set_ylim(0, 62)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7, loc="upper right")
    ax = axes[-1]
    for j, arm in enumerate(arms):
        first = True
        for pts in data[arm]["queues"].values():
            for ready in data[arm].get("ready_s", []):
                seg = [(t - ready, d) for t, d in pts if window[0] <= t - ready <= window[1]]
                if seg:
                    xs, ys = zip(*seg)
                    ax.plot(xs, ys, linewidth=0.6, alpha=0.6, color=colours[j % len(colours)],
                            label=arm if first else None)
                    first = False
    ax.axvline(0, color="black", linestyle=":", linewidth=0.8)
    ax.axhline(40, color="grey", linestyle="--", linewidth=0.8)
    ax.set_xlabel("time since the burst was ready (s)")
    ax.set_ylabel("packets")
    ax.set_ylim(0, 62)
    ax.set_title("every burst of the first repetition, both leaves, aligned", fontsize=9)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, loc="upper left")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=plots.DPI)
    plt.close(fig)
    return path


def plot(results: Results, config: ExperimentConfig, out_dir: Path) -> list[Path]:
    """Queue over time (first repetition of each arm), and bars of the six figures."""
    arms = _arms(results, config)
    flagged = [a for a in arms if results.switch_dropped(a)]
    data = {a: d for a in arms if (d := _series(results, out_dir, a))}
    lead = float(config.params.get("lead_ms", 1000.0)) / 1000.0
    period = float(config.params.get("period_s", PcnSettings.period_s))
    # 1.5 s before to 3 s after a burst at the emulation's 7.5 s period; the same share of any period
    out = [_queue_plot(data, out_dir / "queue_over_time.png", (-lead - period / 15, 0.4 * period))]
    for fig in FIGURES:
        key = _METRIC[fig.key]
        out.append(plots.bars({a: results.metric(a, key) for a in arms}, out_dir / f"{fig.key}.png",
                              f"{key.rsplit('_', 1)[0].replace('_', ' ')} ({_UNIT[key]})",
                              f"{fig.label.split(',')[0]} (paper: {fig.paper})", flagged=flagged))
    return out


def simulated() -> Simulation:
    """How an arm runs in ns-3 (`--backend ns3`): experiments/backends/ns3/pcn.py."""
    from experiments.backends.ns3 import pcn as ns3  # noqa: PLC0415 (ns-3's modules only when asked for)
    return ns3.SIMULATION
