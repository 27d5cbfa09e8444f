"""Experiment 6, the regime map: where loss tolerance pays. Random loss on the bottleneck (0, 0.5,
1, 2, 5 %) x a round-trip time chosen so the bandwidth-delay product is about 5, 25 and 100
packets, 8 workers. In every cell: gradlane and MLT at one bound, TCP cubic and reno at the
kernel's RTO, and TCP with `rto_min` set per route to a few RTTs (the incast literature's fix).
Heatmaps of gradlane / best TCP (rounds/s, p99 round time) and of the accuracy difference, with
what Mathis' law predicts for TCP at that loss and RTT beside them.

The config names the arms once (templates) and the grid in `params`; `setup` makes one arm per
template and cell, with the cell's loss and delay as topology overrides (the network restarts
per cell), so `--resume` and `--report-only` read the expanded arms from the saved config.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from experiments import plots, route_rto, tcp_baselines
from experiments.api import ArmContext, ArmResult, Figure, Row, Summary, Table
from experiments.backends.ns3.simulation import Simulation
from experiments.config import Arm, ExperimentConfig
from experiments.errors import ConfigError
from experiments.mathis import rtt_for_bdp, tcp_share
from experiments.records import Results
from experiments.stats import Stat, fmt_num
from experiments.stats import summarize as stat_of
from experiments.training import run_training

ORDER = 6
TITLE = "Regime map: loss x bandwidth-delay product, gradlane vs MLT vs TCP (default and tuned RTO)"
PAPER = "where each paper's gain lives"
LOSS_MATTERS_PCT = 1.0          # the region where loss should matter: >= 1 % loss ...
LOSS_MATTERS_BDP = 25.0         # ... and >= 25 packets in flight
TCP_BASELINES = False           # both TCP baselines per cell (baselines_table), not per arm
FIGURES = [
    Figure("gain_loss", "rounds/s, gradlane / best TCP, where loss matters (loss >= 1 %, BDP >= 25)",
           "LTP: up to 30x vs TCP", "x", "best TCP per cell and per figure, tuned-RTO arm included; "
           "pooled over those cells' repetitions; our bar: several times"),
    Figure("gain_loss_kernel", "rounds/s, gradlane / TCP at the kernel's RTO, where loss matters",
           "LTP: up to 30x vs TCP", "x", "best TCP arm at Linux's 200 ms RTO_min per cell (what LTP "
           "compares with); pooled over those cells' repetitions"),
    Figure("gain_loss_tuned", "rounds/s, gradlane / TCP at a tuned RTO, where loss matters", "n/a", "x",
           "the tuned-RTO arm per cell; pooled over those cells' repetitions"),
    Figure("gain_clean", "rounds/s, gradlane / best TCP without loss", "n/a", "x",
           "pooled over the loss-free cells; our bar: within 10 % of TCP (>= 0.9x)"),
    Figure("p99_loss", "p99 round time, best TCP / gradlane, where loss matters", "n/a", "x",
           "> 1 = gradlane's tail is shorter"),
    Figure("accuracy_loss", "final accuracy, gradlane - best TCP, where loss matters",
           "no accuracy loss", "points", "best TCP by accuracy per cell; our bar: within 0.5 point"),
    Figure("vs_mlt", "rounds/s, gradlane / MLT at the same bound, every cell", "n/a (MLT: NSDI '24)",
           "x", "random loss gets no switch help, so: within noise"),
]


@dataclass(frozen=True)
class Cell:
    """One point of the map."""

    loss_pct: float
    bdp_packets: float

    @property
    def tag(self) -> str:
        return f"l{self.loss_pct:g}.b{self.bdp_packets:g}"


# -- the grid ---------------------------------------------------------------------------------
def grid(config: ExperimentConfig) -> tuple[list[float], list[float]]:
    """(loss percentages, bandwidth-delay products in packets) of `params.grid`."""
    spec = config.params.get("grid") or {}
    losses, bdps = spec.get("loss_pct"), spec.get("bdp_packets")
    where = f"{config.source}: params.grid"
    for name, values in (("loss_pct", losses), ("bdp_packets", bdps)):
        if not isinstance(values, list) or not values or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            raise ConfigError(f"{where}.{name}: must be a non-empty list of numbers")
    if any(not 0 <= v < 100 for v in losses) or any(v <= 0 for v in bdps):
        raise ConfigError(f"{where}: loss_pct within 0..100 (exclusive), bdp_packets positive")
    return [float(v) for v in losses], [float(v) for v in bdps]


def delay_ms_for(bdp_packets: float, bottleneck_pps: float) -> float:
    """The bottleneck link's delay per direction (ms) that makes its RTT carry `bdp_packets`."""
    return round(rtt_for_bdp(bdp_packets, bottleneck_pps) * 1000.0 / 2.0, 3)


def expand(config: ExperimentConfig) -> tuple[Arm, ...]:
    """One arm per template arm and cell, named TEMPLATE.lLOSS.bBDP, with the cell's loss and
    delay as topology overrides and its settings in params (template, loss_pct, bdp_packets,
    rtt_ms, and rto_min_ms for a template with params.rto_min_rtts)."""
    losses, bdps = grid(config)
    pps = config.topology.bottleneck_pps
    if not pps:
        raise ConfigError(f"{config.source}: topology.bottleneck_pps: the regime map needs a bottleneck rate")
    arms = []
    for bdp in bdps:
        delay = delay_ms_for(bdp, pps)
        rtt_ms = 2 * delay
        for loss in losses:
            cell = Cell(loss, bdp)
            for template in config.arms:
                params = {**template.params, "template": template.name, "loss_pct": loss,
                          "bdp_packets": bdp, "rtt_ms": rtt_ms}
                rtts = template.params.get("rto_min_rtts")
                if rtts is not None:
                    if template.transport != "tcp" or not isinstance(rtts, (int, float)) or rtts <= 0:
                        raise ConfigError(f"{config.source}: arms[{template.name}]: rto_min_rtts needs "
                                          "transport tcp and a positive number")
                    params["rto_min_ms"] = max(1.0, round(rtts * rtt_ms, 1))
                topology = {**template.topology, "loss_pct": loss, "delay_ms": delay}
                arms.append(replace(template, name=f"{template.name}.{cell.tag}", topology=topology,
                                    params=params))
    return tuple(arms)


def setup(config: ExperimentConfig) -> ExperimentConfig:
    """Expand the template arms over the grid (see `expand`); record the templates."""
    if any("template" in a.params for a in config.arms):
        return config           # already expanded (a saved config)
    arms = expand(config)
    params = {**config.params, "templates": [a.name for a in config.arms]}
    return replace(config, arms=arms, params=params)


def cell_of(config: ExperimentConfig, arm: str) -> Cell | None:
    """The cell of an expanded arm (None for an arm the config does not know)."""
    try:
        p = config.arm(arm).params
    except ConfigError:
        return None
    if "loss_pct" not in p or "bdp_packets" not in p:
        return None
    return Cell(float(p["loss_pct"]), float(p["bdp_packets"]))


# -- one run ----------------------------------------------------------------------------------
_RTT = re.compile(r"= ([\d.]+)/([\d.]+)/([\d.]+)/")


def ping_min_ms(summary: str) -> float | None:
    """The minimum RTT (ms) of ping's summary line ('rtt min/avg/max/mdev = a/b/c/d ms')."""
    match = _RTT.search(summary)
    return float(match.group(1)) if match else None


def base_rtt_ms(session: Any, count: int = 5) -> float | None:
    """The path's round-trip time before the job, by ping from the first worker to the PS: the
    minimum of `count` pings, the least queued (None when every ping was lost)."""
    worker = session.net.get("w1")
    ps_ip = session.topo.hosts["ps"].ip
    return ping_min_ms(worker.cmd(f"ping -n -q -c {count} -i 0.2 -W 1 {ps_ip}"))


def run_arm(ctx: ArmContext) -> ArmResult:
    """One job of the arm on the cell's network; the tuned-RTO arm first sets rto_min on every
    route of every host (restored after the job, so the cell's other arms keep the default)."""
    session = ctx.session
    rto_min = ctx.arm.params.get("rto_min_ms")
    hosts = list(session.net.hosts)
    measured = base_rtt_ms(session)
    if rto_min is not None:
        for host in hosts:
            route_rto.set_rto_min(host, float(rto_min))
    try:
        routes_rto = route_rto.rto_min_ms_of(session.net.get("w1"))
        outcome = run_training(ctx)
    finally:
        if rto_min is not None:
            for host in hosts:
                route_rto.set_rto_min(host, None)
    p = ctx.arm.params
    metrics = dict(outcome.metrics)
    metrics.update(loss_pct=p["loss_pct"], bdp_packets=p["bdp_packets"], rtt_ms=p["rtt_ms"],
                   base_rtt_ms=measured, rto_min_ms=rto_min, worker_route_rto_min_ms=routes_rto)
    return ArmResult(rounds=outcome.rounds, metrics=metrics, ok=outcome.ok, error=outcome.error())


# -- the map ----------------------------------------------------------------------------------
def arms_by_cell(results: Results, config: ExperimentConfig) -> dict[Cell, dict[str, str]]:
    """cell -> {template name: arm name} for the arms with finished runs."""
    out: dict[Cell, dict[str, str]] = {}
    for arm in results.arms():
        cell = cell_of(config, arm)
        if cell is not None and results.runs_of(arm):
            out.setdefault(cell, {})[config.arm(arm).params["template"]] = arm
    return out


def _transport(config: ExperimentConfig, arm: str) -> str:
    return config.arm(arm).transport


def best_tcp(results: Results, config: ExperimentConfig, arms: dict[str, str], metric: str,
             lower: bool) -> str | None:
    """The TCP arm of one cell with the best mean `metric` (lower or higher is better)."""
    scored = [(stat_of(results.metric(a, metric)).mean, a) for a in arms.values()
              if _transport(config, a) == "tcp"]
    scored = [(v, a) for v, a in scored if math.isfinite(v)]
    if not scored:
        return None
    return (min if lower else max)(scored)[1]


def _paired(results: Results, a: str, b: str, metric: str) -> list[tuple[float, float]]:
    x = {r["rep"]: r["metrics"].get(metric) for r in results.runs_of(a)}
    y = {r["rep"]: r["metrics"].get(metric) for r in results.runs_of(b)}
    return [(x[k], y[k]) for k in sorted(x) if k in y and isinstance(x[k], (int, float))
            and isinstance(y[k], (int, float))]


def cell_values(results: Results, config: ExperimentConfig, kind: str) -> dict[Cell, tuple[list[float], str]]:
    """Per cell: the per-repetition values of one map and the arm compared with.
    kind: 'throughput' (gradlane / best TCP rounds/s), 'p99' (best TCP / gradlane p99 round
    time), 'accuracy' (gradlane - best TCP final accuracy, points), 'mlt' (gradlane / MLT
    rounds/s), 'kernel' and 'tuned' (gradlane / the best TCP arm at the kernel's RTO, and at a
    tuned RTO, rounds/s: `tcp_baselines`)."""
    ours_name = _template_of(config, "ltp")
    mlt_name = _template_of(config, "mlt")
    out: dict[Cell, tuple[list[float], str]] = {}
    for cell, arms in arms_by_cell(results, config).items():
        ours = arms.get(ours_name) if ours_name else None
        if ours is None:
            continue
        if kind == "throughput":
            base = best_tcp(results, config, arms, "rounds_per_s", lower=False)
            values = [a / b for a, b in _paired(results, ours, base, "rounds_per_s") if b] if base else []
        elif kind == "p99":
            base = best_tcp(results, config, arms, "round_time_p99_s", lower=True)
            values = [b / a for a, b in _paired(results, ours, base, "round_time_p99_s") if a] if base else []
        elif kind == "accuracy":
            base = best_tcp(results, config, arms, "final_accuracy", lower=False)
            values = [100.0 * (a - b) for a, b in _paired(results, ours, base, "final_accuracy")] if base else []
        elif kind == "mlt":
            base = arms.get(mlt_name) if mlt_name else None
            values = [a / b for a, b in _paired(results, ours, base, "rounds_per_s") if b] if base else []
        elif kind in tcp_baselines.KINDS:
            base = tcp_baselines.best_by_kind(results, config, arms.values()).get(kind)
            values = [a / b for a, b in _paired(results, ours, base, "rounds_per_s") if b] if base else []
        else:
            raise ValueError(f"unknown map {kind!r}")
        if base is not None:
            out[cell] = (values, config.arm(base).params["template"])
    return out


def _template_of(config: ExperimentConfig, transport: str) -> str | None:
    for arm in config.arms:
        if arm.transport == transport and "template" in arm.params:
            return str(arm.params["template"])
    return None


def mathis_cells(config: ExperimentConfig) -> dict[Cell, float]:
    """Per cell: the share of the bottleneck Mathis' law lets the job's TCP flows fill (one
    flow per worker, at the cell's configured RTT and loss); 1.0 without loss."""
    losses, bdps = grid(config)
    pps = float(config.topology.bottleneck_pps or 0)
    workers = config.topology.workers
    return {Cell(loss, bdp): tcp_share(rtt_for_bdp(bdp, pps), loss / 100.0, workers, pps)
            for loss in losses for bdp in bdps}


def _in_region(cell: Cell) -> bool:
    return cell.loss_pct >= LOSS_MATTERS_PCT and cell.bdp_packets >= LOSS_MATTERS_BDP


def _pooled(values: dict[Cell, tuple[list[float], str]], keep: Any) -> Stat:
    return stat_of(v for cell, (vs, _) in values.items() if keep(cell) for v in vs)


# -- summary ----------------------------------------------------------------------------------
def summarize(results: Results, config: ExperimentConfig) -> Summary:
    """Headline rows over the map's regions, one table per map, Mathis' prediction, placement."""
    flag = results.switch_dropped()
    maps = {kind: cell_values(results, config, kind)
            for kind in ("throughput", "p99", "accuracy", "mlt", *tcp_baselines.KINDS)}
    rows = [
        Row("gain_loss", _pooled(maps["throughput"], _in_region), _region_note(maps["throughput"]), flag),
        Row("gain_loss_kernel", _pooled(maps["kernel"], _in_region), _region_note(maps["kernel"]), flag),
        Row("gain_loss_tuned", _pooled(maps["tuned"], _in_region), _region_note(maps["tuned"]), flag),
        Row("gain_clean", _pooled(maps["throughput"], lambda c: c.loss_pct == 0), "", flag),
        Row("p99_loss", _pooled(maps["p99"], _in_region), "", flag),
        Row("accuracy_loss", _pooled(maps["accuracy"], _in_region), "", flag),
        Row("vs_mlt", _pooled(maps["mlt"], lambda c: True), "", flag),
    ]
    losses, bdps = grid(config)
    mathis = mathis_cells(config)
    titles = {"throughput": "rounds/s, gradlane / best TCP (mean ± sd, n; best TCP arm)",
              "p99": "p99 round time, best TCP / gradlane (> 1: gradlane shorter)",
              "accuracy": "final accuracy, gradlane - best TCP by accuracy (points)",
              "mlt": "rounds/s, gradlane / MLT at the same bound"}
    tables = []
    for kind, title in titles.items():
        tables.append(Table(f"Map: {title}; rows loss %, columns BDP packets",
                            ["loss % \\ BDP", *(f"{b:g}" for b in bdps)],
                            [[f"{loss:g}", *(_cell_text(maps[kind].get(Cell(loss, b))) for b in bdps)]
                             for loss in losses]))
    tables.append(Table("Mathis' law: share of the bottleneck the job's TCP flows can fill at the cell's "
                        "configured RTT and loss (one flow per worker; 1 = not loss-limited), and the "
                        "best TCP arm's measured rounds/s",
                        ["loss % \\ BDP", *(f"{b:g}" for b in bdps)],
                        [[f"{loss:g}", *(_mathis_text(mathis[Cell(loss, b)], results, config, Cell(loss, b))
                                         for b in bdps)] for loss in losses]))
    tables.append(baselines_table(results, config, maps))
    tables.append(_cells_table(results, config))
    return Summary(rows=rows, tables=tables, notes=_notes(config))


def baselines_table(results: Results, config: ExperimentConfig,
                    maps: dict[str, dict[Cell, tuple[list[float], str]]]) -> Table:
    """Per cell: gradlane's, MLT's and both TCP baselines' rounds/s, and gradlane over MLT, over
    TCP at the kernel's RTO and over TCP at a tuned RTO, each ratio beside the others (ratios
    paired by repetition; n/a where the run has no such arm)."""
    losses, bdps = grid(config)
    by_cell = arms_by_cell(results, config)
    ours_name, mlt_name = _template_of(config, "ltp"), _template_of(config, "mlt")

    def rate(arm: str | None) -> str:
        return stat_of(results.metric(arm, "rounds_per_s")).fmt(3) if arm else "n/a"

    rows = []
    for bdp in bdps:
        for loss in losses:
            cell = Cell(loss, bdp)
            arms = by_cell.get(cell, {})
            best = tcp_baselines.best_by_kind(results, config, arms.values())
            rows.append([f"{loss:g}", f"{bdp:g}", rate(arms.get(ours_name or "")), rate(arms.get(mlt_name or "")),
                         *(rate(best.get(k)) + (f" ({_template_name(config, best[k])})" if k in best else "")
                           for k in tcp_baselines.KINDS),
                         *(_cell_text(maps[k].get(cell)) for k in ("mlt", *tcp_baselines.KINDS))])
    return Table("Per cell, rounds/s (mean ± sd, n) and gradlane's ratios (paired by repetition): against "
                 "MLT, against TCP at the kernel's RTO (Linux's 200 ms RTO_min; the best such arm) and "
                 "against TCP at a tuned RTO, side by side",
                 ["loss %", "BDP", "gradlane", "MLT", tcp_baselines.LABELS["kernel"],
                  tcp_baselines.LABELS["tuned"], "gradlane / MLT", *tcp_baselines.HEADERS], rows)


def _region_note(values: dict[Cell, tuple[list[float], str]]) -> str:
    cells = [c for c in values if _in_region(c)]
    if not cells:
        return "no cell of this run lies in the region"
    return f"{len(cells)} cell(s): " + ", ".join(c.tag for c in sorted(cells, key=lambda c: (c.loss_pct, c.bdp_packets)))


def _cell_text(entry: tuple[list[float], str] | None) -> str:
    if entry is None:
        return "n/a"
    values, base = entry
    return f"{stat_of(values).fmt(3)} vs {base}" if values else f"n/a vs {base}"


def _mathis_text(share: float, results: Results, config: ExperimentConfig, cell: Cell) -> str:
    arms = arms_by_cell(results, config).get(cell, {})
    best = best_tcp(results, config, arms, "rounds_per_s", lower=False)
    measured = f"; {_template_name(config, best)} {fmt_num(stat_of(results.metric(best, 'rounds_per_s')).mean, 3)} rounds/s" \
        if best else ""
    return f"{share:.2f}{measured}"


def _template_name(config: ExperimentConfig, arm: str) -> str:
    return str(config.arm(arm).params.get("template", arm))


def _cells_table(results: Results, config: ExperimentConfig) -> Table:
    rows = []
    for arm in results.arms():
        cell = cell_of(config, arm)
        if cell is None:
            continue
        p = config.arm(arm).params
        rows.append([arm, f"{cell.loss_pct:g}", f"{cell.bdp_packets:g}", f"{p['rtt_ms']:g}",
                     fmt_num(stat_of(results.metric(arm, "base_rtt_ms")).mean, 3),
                     fmt_num(p.get("rto_min_ms"), 3) if p.get("rto_min_ms") is not None else "kernel",
                     f"{len(results.runs_of(arm))}/{len([r for r in results.runs if r['arm'] == arm])}",
                     stat_of(results.metric(arm, "rounds_per_s")).fmt(3),
                     stat_of(results.metric(arm, "round_time_p99_s")).fmt(3),
                     stat_of(results.metric(arm, "final_accuracy")).fmt(3),
                     fmt_num(stat_of(results.metric(arm, "retransmissions")).mean, 3),
                     _closed_by_bound(results, arm)])
    return Table("Per arm and cell (configured RTT = 2 x the bottleneck's delay; measured = minimum of 5 "
                 "pings before the job, switches' own latency included)",
                 ["arm", "loss %", "BDP pkts", "RTT ms (set)", "RTT ms (measured)", "rto_min ms", "runs ok",
                  "rounds/s", "p99 round s", "final accuracy", "retransmissions/run",
                  "pushes closed by the bound"], rows)


def _closed_by_bound(results: Results, arm: str) -> str:
    """The share of rounds in which some worker's push closed by its bound (with data still
    missing), from the PS's round records; n/a for transports that do not report it."""
    reasons = [r.get("closed_by") for r in results.rounds_of(arm) if isinstance(r.get("closed_by"), list)]
    if not reasons:
        return "n/a"
    return f"{sum(1 for c in reasons if 'bound' in c)}/{len(reasons)}"


def _notes(config: ExperimentConfig) -> list[str]:
    pps = config.topology.bottleneck_pps
    return [
        f"Loss is random, per packet, in both directions of the bottleneck (data and ACKs alike); "
        f"its delay sets the RTT (2 x delay) for a BDP of B packets at {fmt_num(pps)} packets/s. "
        "Arms alternate within each cell; the network restarts between cells.",
        "Best TCP is chosen per cell and per map among the TCP arms (cubic and reno at the kernel's "
        "RTO, and the tuned-RTO arm), so the ratio is against the strongest TCP of that cell.",
        "Mathis' law describes long flows in congestion avoidance: a round's short flows also pay slow "
        "start and retransmission timeouts, which it leaves out, so it bounds TCP from above; where the "
        "measured TCP falls far below it, timeouts (the tuned-RTO arm's column) are the cause to check.",
        "Where each paper's setting lies on this map (the papers give no random-loss rate: their loss is "
        "queue overflow or injected bursts): LTP's incast (8 workers + 1 PS) and DLCP/MLT's datacenter "
        "simulations run at microsecond RTTs where Linux's 200 ms RTO_min is thousands of RTTs, so their "
        "TCP baselines sit where timeouts, not Mathis, decide: the right-hand, lossy part of the map with "
        "the default-RTO arms, which the tuned-RTO arm here answers; DBLP injects 60-90 % loss for about one "
        "round, far right of the loss axis and only for those rounds, against the same transport with a "
        "fixed bound (not TCP); PLOT's loss comes from background congestion at a shared queue, not from "
        "the link (0 % on this axis, the queue decides); PCN runs on BMv2 with a 60-packet queue and TCP "
        "background flows, i.e. the loss-free, small-BDP corner where our emulation sits as well, and its "
        "gain is queueing delay, not loss recovery.",
    ]


# -- plots ------------------------------------------------------------------------------------
def plot(results: Results, config: ExperimentConfig, out_dir: Path) -> list[Path]:
    """Heatmaps of the three maps, the gradlane / MLT map and Mathis' prediction."""
    losses, bdps = grid(config)
    out = []
    specs = (("throughput", "map_throughput.png", "rounds/s, gradlane / best TCP", 1.0),
             ("p99", "map_p99.png", "p99 round time, best TCP / gradlane", 1.0),
             ("accuracy", "map_accuracy.png", "final accuracy, gradlane - best TCP (points)", 0.0),
             ("mlt", "map_vs_mlt.png", "rounds/s, gradlane / MLT (same bound)", 1.0))
    for kind, name, title, center in specs:
        cells = {}
        for cell, (values, base) in cell_values(results, config, kind).items():
            s = stat_of(values)
            text = f"{fmt_num(s.mean, 3)}\n±{fmt_num(s.sd, 2)} n={s.n}\n{base}" if s.n else f"n/a\n{base}"
            cells[(cell.loss_pct, cell.bdp_packets)] = (s.mean if s.n else None, text)
        out.append(plots.heatmap(cells, losses, bdps, out_dir / name, title, "loss %", "BDP (packets)",
                                 center=center))
    mathis = {(c.loss_pct, c.bdp_packets): (v, f"{v:.2f}") for c, v in mathis_cells(config).items()}
    out.append(plots.heatmap(mathis, losses, bdps, out_dir / "map_mathis.png",
                             "Mathis: TCP's share of the bottleneck (8 flows)", "loss %", "BDP (packets)",
                             center=None, cmap="Blues"))
    return out


def simulated() -> Simulation:
    """How an arm runs in ns-3 (`--backend ns3`): experiments/backends/ns3/regimes.py."""
    from experiments.backends.ns3 import regimes as ns3  # noqa: PLC0415 (ns-3's modules only when asked for)
    return ns3.SIMULATION
