"""Cross-validation of a simulated run (`--backend ns3`) against the emulation:
at the emulation's scale, the published emulation figures beside the simulated ones per arm,
their ratio, whether it is within 15 %, and for each miss the cause measured in the records.

Both sides' figures are computed here from records by one set of functions, so they mean the
same thing. The emulation's side is kept as a small reference file, `crossval.json`, which an
emulation run of `ltp_incast` or `pcn` writes beside its summary and `--publish` copies to
docs/results/NAME/ (the raw records are not committed); `python -m experiments.crossval
RESULTS_DIR` writes it from an existing emulation results directory. A simulated run whose
config has the emulation's scale (topology, workers, bottleneck, queue, gradient size) gets the
section in its summary; one at another scale (the paper-scale configs) does not.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from experiments import config as configs
from experiments.api import Table
from experiments.config import ExperimentConfig
from experiments.records import Results, ResultsDir
from experiments.stats import fmt_num, percentile

TOLERANCE = 0.15
REFERENCE = "crossval.json"
EXPERIMENTS = ("ltp_incast", "pcn")
REPO = Path(__file__).resolve().parents[1]
PUBLISHED = REPO / "docs" / "results"
# ltp_incast's worker parts (round records' worker_breakdown), in the order a round runs
PARTS = ("compute_s", "push_s", "wait_s", "pull_s")
FULL_QUEUE_SLACK = 1        # a push "met a full queue" when its deepest telemetry depth >= depth - 1

Figures = dict[str, dict[str, float | None]]       # arm -> figure key -> value


@dataclass(frozen=True)
class FigureSpec:
    """One compared figure: its key in the figures, its label, and a scale for display."""

    key: str
    label: str
    scale: float = 1.0          # displayed value = value x scale
    digits: int = 3


LTP_FIGURES = (
    FigureSpec("round_p50_s", "p50 round (s; rounds pooled over repetitions)"),
    FigureSpec("round_p99_s", "p99 round (s)"),
    FigureSpec("push_s", "a worker's push, first DATA to STOP (ms, mean)", 1000.0),
    FigureSpec("wait_s", "a worker's wait, STOP to the pull's first packet (ms, mean)", 1000.0),
    FigureSpec("pull_s", "a worker's pull (ms, mean)", 1000.0),
    FigureSpec("tail_drops", "queue tail drops per run", digits=4),
    FigureSpec("queue_p50", "deepest queue a push met (telemetry, median of rounds, packets)"),
)
PCN_FIGURES = (
    FigureSpec("start_queue_pkts", "queue when a burst starts (packets)"),
    FigureSpec("max_queue_in_burst_pkts", "max queue during a burst (packets)"),
    FigureSpec("burst_completion_s", "burst completion (s)"),
    FigureSpec("queueing_delay_ms", "mean queueing delay during a burst (ms)"),
    FigureSpec("background_throughput_mbps", "background TCP throughput (Mb/s)"),
)
SPECS = {"ltp_incast": LTP_FIGURES, "pcn": PCN_FIGURES}


@dataclass(frozen=True)
class Comparison:
    """One figure of one arm on both sides."""

    arm: str
    spec: FigureSpec
    sim: float | None
    emu: float | None
    cause: str = ""

    @property
    def ratio(self) -> float | None:
        """ns-3 / emulation (None when either is unknown or the emulation's is 0)."""
        if self.sim is None or self.emu is None or self.emu == 0:
            return None
        return self.sim / self.emu

    @property
    def within(self) -> bool | None:
        """Whether the ratio is within TOLERANCE of 1 (None: not comparable)."""
        r = self.ratio
        return None if r is None else abs(r - 1.0) <= TOLERANCE + 1e-12


# -- figures from records ------------------------------------------------------------------------
def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _ok_rounds(results: Results, arm: str) -> list[dict[str, Any]]:
    ok = {r["rep"] for r in results.runs_of(arm)}
    return [r for r in results.rounds_of(arm) if r["rep"] in ok]


def round_parts(rounds: list[dict[str, Any]]) -> dict[str, float | None]:
    """Mean seconds per round of the round time, of each worker part (PARTS) and of a simulated
    TCP round's pull stage (`pull_stage_s`: the PS has every push -> the last pull is in; ns-3's
    TCP has no per-worker split), leaving out each repetition's first round (the emulation's is
    the PS's gather + scatter only). A part not reported by every round is None."""
    used = [r for r in rounds if _finite(r.get("round_time_s")) and r.get("round") not in (0, None)]
    out: dict[str, float | None] = {"round_s": _mean([float(r["round_time_s"]) for r in used])}
    for part in (*PARTS, "pull_stage_s"):
        values = []
        for r in used:
            wb = r.get("worker_breakdown") if isinstance(r.get("worker_breakdown"), dict) else {}
            value = r.get(part) if part == "pull_stage_s" else wb.get(part)
            if _finite(value):
                values.append(float(value))
        out[part] = _mean(values) if used and len(values) == len(used) else None
    return out


def _tail_drops(run: dict[str, Any]) -> float | None:
    tail = (run.get("switch") or {}).get("queue_tail_drops") or {}
    known = [v for v in tail.values() if _finite(v)]
    return float(sum(known)) if known else None


def ltp_figures(results: Results, queue_depth: int) -> Figures:
    """Per arm: round p50/p99 (rounds pooled over finished repetitions), the worker parts (mean
    per round), tail drops per run, the deepest queue a push met (median of rounds) and, beside
    them for causes, the share of rounds whose push met a full queue and the slowest rounds' parts."""
    out: Figures = {}
    for arm in results.arms():
        runs = results.runs_of(arm)
        if not runs:
            continue
        rounds = _ok_rounds(results, arm)
        times = [float(r["round_time_s"]) for r in rounds if _finite(r.get("round_time_s"))]
        parts = round_parts(rounds)
        depths = [float(r["queue_depth"]) for r in rounds if _finite(r.get("queue_depth"))]
        drops = [d for d in (_tail_drops(r) for r in runs) if d is not None]
        figs: dict[str, float | None] = {
            "round_p50_s": percentile(times, 50) if times else None,
            "round_p99_s": percentile(times, 99) if times else None,
            "push_s": parts["push_s"], "wait_s": parts["wait_s"], "pull_s": parts["pull_s"],
            "tail_drops": _mean(drops),
            "queue_p50": percentile(depths, 50) if depths else None,
            "full_queue_rounds": (sum(d >= queue_depth - FULL_QUEUE_SLACK for d in depths) / len(depths))
            if depths else None,
            "rounds": float(len(times)), "runs": float(len(runs)),
        }
        figs.update({f"mean_{k}": v for k, v in parts.items()})
        if times:
            slow_cut = percentile(times, 90)
            slow = round_parts([r for r in rounds if _finite(r.get("round_time_s"))
                                and float(r["round_time_s"]) >= slow_cut])
            figs.update({f"slow_{k}": v for k, v in slow.items()})
        out[arm] = figs
    return out


def pcn_figures(results: Results) -> Figures:
    """Per arm: the pcn analysis' run metrics (mean over finished runs) and, for causes, every
    worker's first burst's completion and its later bursts' (mean over runs and workers)."""
    out: Figures = {}
    for arm in results.arms():
        if not results.runs_of(arm):
            continue
        figs: dict[str, float | None] = {s.key: _mean(results.metric(arm, s.key)) for s in PCN_FIGURES}
        first, later = [], []
        for rep in sorted({r["rep"] for r in results.runs_of(arm)}):
            bursts = sorted(results.rounds_of(arm, rep), key=lambda r: r.get("round") or 0)
            for i, burst in enumerate(bursts):
                done = [float(w["completion_s"]) for w in burst.get("workers") or []
                        if _finite(w.get("completion_s"))]
                (first if i == 0 else later).extend(done)
        figs["first_burst_s"], figs["later_bursts_s"] = _mean(first), _mean(later)
        out[arm] = figs
    return out


def figures(name: str, results: Results, config: ExperimentConfig) -> Figures:
    """The compared figures (and those their causes use) of every arm with a finished run."""
    if name == "ltp_incast":
        return ltp_figures(results, config.topology.queue_depth)
    if name == "pcn":
        return pcn_figures(results)
    raise ValueError(f"no cross-validation for experiment {name}")


def scale(config: ExperimentConfig) -> dict[str, Any]:
    """What must match for two runs to be at the same scale (rounds and repetitions need not)."""
    t = config.topology
    return {"topology": t.name, "workers": t.workers, "background": t.background,
            "bottleneck_pps": t.bottleneck_pps, "queue_depth": t.queue_depth, "delay_ms": t.delay_ms,
            "loss_pct": t.loss_pct, "model": config.model.hidden, "model_kind": config.model.kind,
            "chunk_elems": config.chunk_elems, "gradient_params": config.params.get("sim_gradient_params")}


# -- the emulation's reference ------------------------------------------------------------------
def reference(results: Results, config: ExperimentConfig, source: str) -> dict[str, Any]:
    """The emulation's side: its scale and its figures per arm (`source`: where they come from)."""
    return {"experiment": config.name, "source": source, "repetitions": config.repetitions,
            "rounds": config.rounds, "scale": scale(config),
            "arms": figures(config.name, results, config)}


def write_reference(results: Results, config: ExperimentConfig, out_dir: Path) -> Path:
    """crossval.json of an emulation run in `out_dir`."""
    path = out_dir / REFERENCE
    ref = reference(results, config, f"results/{config.name}/{out_dir.name}")
    path.write_text(json.dumps(ref, indent=1, sort_keys=True) + "\n")
    return path


def load_reference(config: ExperimentConfig) -> dict[str, Any] | None:
    """The reference a simulated run is compared with: `params.xval_reference` (a path), else the
    published docs/results/NAME/crossval.json; None when there is none."""
    chosen = config.params.get("xval_reference")
    path = Path(chosen) if chosen else PUBLISHED / config.name / REFERENCE
    if not path.is_absolute() and not path.exists():
        path = REPO / path
    if not path.exists():
        return None
    return json.loads(path.read_text())


# -- causes of the misses ------------------------------------------------------------------------
def _ms(x: float | None) -> str:
    return "n/a" if x is None else f"{x * 1000:.1f}"


def _decomposition(sim: dict[str, float | None], emu: dict[str, float | None], prefix: str) -> str:
    """The round-time gap split into the worker parts both sides report, the rest apart."""
    s_round, e_round = sim.get(f"{prefix}round_s"), emu.get(f"{prefix}round_s")
    if s_round is None or e_round is None:
        return ""
    pieces, s_rest, e_rest = [], s_round, e_round
    for part in PARTS:
        s, e, name = sim.get(f"{prefix}{part}"), emu.get(f"{prefix}{part}"), part.removesuffix("_s")
        if s is None and part == "pull_s" and sim.get(f"{prefix}pull_stage_s") is not None:
            s, name = sim.get(f"{prefix}pull_stage_s"), "pull (ns-3: the pull stage)"
        if s is None or e is None:
            continue
        s_rest, e_rest = s_rest - s, e_rest - e
        pieces.append((e - s, f"{name} {(e - s) * 1000:+.1f} ({_ms(s)} vs {_ms(e)})"))
    pieces.append((e_rest - s_rest, f"rest {(e_rest - s_rest) * 1000:+.1f} ({_ms(s_rest)} vs {_ms(e_rest)})"))
    pieces.sort(key=lambda p: -abs(p[0]))
    return (f"round {_ms(s_round)} vs {_ms(e_round)} ms (ns-3 vs emulation), gap "
            f"{(e_round - s_round) * 1000:+.1f} ms: " + ", ".join(text for _, text in pieces))


def ltp_cause(key: str, sim: dict[str, float | None], emu: dict[str, float | None]) -> str:
    """The measured make-up of a missed ltp_incast figure."""
    if key == "round_p50_s":
        text = _decomposition(sim, emu, "mean_")
        return f"mean {text}" if text else ""
    if key == "round_p99_s":
        text = _decomposition(sim, emu, "slow_")
        return f"slowest 10 % of rounds, {text}" if text else ""
    if key in ("push_s", "wait_s", "pull_s"):
        s_round, e_round = sim.get("mean_round_s"), emu.get("mean_round_s")
        s, e = sim.get(key), emu.get(key)
        if None in (s_round, e_round, s, e) or not s_round or not e_round:
            return ""
        return (f"{100 * s / s_round:.0f} % of an ns-3 round vs {100 * e / e_round:.0f} % of an "
                f"emulated one")
    if key in ("tail_drops", "queue_p50"):
        s, e = sim.get("full_queue_rounds"), emu.get("full_queue_rounds")
        if s is None or e is None:
            return ""
        return f"pushes that met a full queue: {100 * s:.0f} % of ns-3's rounds vs {100 * e:.0f} % of the emulation's"
    return ""


def pcn_cause(key: str, sim: dict[str, float | None], emu: dict[str, float | None]) -> str:
    """The measured make-up of a missed pcn figure."""
    if key == "burst_completion_s":
        parts = []
        for label, which in (("first burst", "first_burst_s"), ("later bursts", "later_bursts_s")):
            s, e = sim.get(which), emu.get(which)
            if s is None or not e:
                return ""
            parts.append(f"{label} {fmt_num(s, 3)} vs {fmt_num(e, 3)} s ({s / e:.2f})")
        return "per worker and burst, ns-3 vs emulation: " + ", ".join(parts)
    return ""


CAUSES: dict[str, Callable[[str, dict[str, float | None], dict[str, float | None]], str]] = {
    "ltp_incast": ltp_cause, "pcn": pcn_cause}


def compare(name: str, sim: Figures, emu: Figures) -> list[Comparison]:
    """Every compared figure of every arm both sides ran, with the measured cause of each miss."""
    out = []
    for arm in sim:
        if arm not in emu:
            continue
        for spec in SPECS[name]:
            c = Comparison(arm, spec, sim[arm].get(spec.key), emu[arm].get(spec.key))
            if c.within is False:
                cause = CAUSES[name](spec.key, sim[arm], emu[arm]) or "not measured in these records"
                c = Comparison(c.arm, c.spec, c.sim, c.emu, cause)
            out.append(c)
    return out


# -- the summary's section -----------------------------------------------------------------------
@dataclass(frozen=True)
class Section:
    """The cross-validation table and its notes."""

    table: Table
    notes: list[str]
    comparisons: list[Comparison]


def _shown(spec: FigureSpec, value: float | None) -> str:
    return "n/a" if value is None else fmt_num(value * spec.scale, spec.digits)


def _model_note(config: ExperimentConfig) -> str:
    p = config.params
    rx, tx, pps = p.get("sim_host_rx_us"), p.get("sim_host_tx_us"), p.get("sim_switch_pps")
    host = (f"the agents' software time modelled at {fmt_num(rx, 3)} us per received and "
            f"{fmt_num(tx, 3)} us per sent datagram (params.sim_host_rx_us / sim_host_tx_us)"
            if rx or tx else "no host software time modelled (hosts answer instantly)")
    switch = (f"switches forwarding at most {fmt_num(pps, 5)} packets/s per host link (params.sim_switch_pps)"
              if pps else "switches at line rate")
    return f"Simulated with {host} and {switch}: docs/ns3.md, \"Host software time\"."


def section(results: Results, config: ExperimentConfig) -> Section | None:
    """The cross-validation of a simulated run against the emulation's reference, or None when
    the experiment has none, no reference exists or the run is not at the emulation's scale."""
    if config.name not in EXPERIMENTS:
        return None
    ref = load_reference(config)
    if ref is None or ref.get("scale") != json.loads(json.dumps(scale(config))):
        return None
    comparisons = compare(config.name, figures(config.name, results, config), ref["arms"])
    if not comparisons:
        return None
    rows = []
    for c in comparisons:
        verdict = {True: "yes", False: "no", None: "n/a"}[c.within]
        rows.append([c.arm, c.spec.label, _shown(c.spec, c.sim), _shown(c.spec, c.emu),
                     fmt_num(c.ratio, 3) if c.ratio is not None else "n/a", verdict, c.cause])
    compared = [c for c in comparisons if c.within is not None]
    within = sum(1 for c in compared if c.within)
    title = (f"Cross-validation against the emulation: the emulation's figures from "
             f"{ref.get('source', '?')} ({ref.get('repetitions', '?')} repetition(s) of "
             f"{ref.get('rounds', '?')} rounds), computed from its records as ns-3's are; within "
             f"{TOLERANCE:.0%} means 0.85 <= ns-3 / emulation <= 1.15; a miss's cause is measured in "
             f"both sides' records (ms: ns-3 vs emulation)")
    notes = [f"Cross-validation: {within} of {len(compared)} compared figures within {TOLERANCE:.0%} of the "
             f"emulation's. {_model_note(config)}"]
    return Section(Table(title, ["arm", "figure", "ns-3", "emulation", "ns-3 / emulation",
                                 f"within {TOLERANCE:.0%}", "measured cause of the miss"], rows),
                   notes, comparisons)


def main(argv: list[str] | None = None) -> int:
    """`python -m experiments.crossval RESULTS_DIR [--out PATH]`: the reference of an emulation run."""
    ap = argparse.ArgumentParser(prog="python -m experiments.crossval", description=main.__doc__)
    ap.add_argument("results_dir", help="an emulation run's results directory (results/NAME/<timestamp>)")
    ap.add_argument("--out", help="where to write it (default: RESULTS_DIR/crossval.json)")
    args = ap.parse_args(argv)
    path = Path(args.results_dir)
    if not (path / "config.yaml").exists() or not (path / "runs.jsonl").exists():
        sys.stderr.write(f"crossval: error: {path} is not a results directory (no config.yaml / runs.jsonl)\n")
        return 2
    config = configs.load_saved(path / "config.yaml")
    if config.name not in EXPERIMENTS:
        sys.stderr.write(f"crossval: error: experiment {config.name} has no cross-validation "
                         f"(only {', '.join(EXPERIMENTS)})\n")
        return 2
    if config.params.get("backend") == "ns3":
        sys.stderr.write(f"crossval: error: {path} is a simulated run; the reference is an emulation run\n")
        return 2
    ref = reference(ResultsDir(path).load(), config, f"results/{config.name}/{path.name}")
    out = Path(args.out) if args.out else path / REFERENCE
    out.write_text(json.dumps(ref, indent=1, sort_keys=True) + "\n")
    print(f"crossval: {out} ({len(ref['arms'])} arms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
