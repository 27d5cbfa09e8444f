"""dlcp_ablation's figures when simulated (`--backend ns3`, experiments/backends/ns3/dlcp_ablation.py): DLCP's 144-host
loaded leaf-spine with sized gradients, so the figures are the network's: round times, each
worker's gradient push time (DLCP's "tail FCT"), the background flows' completion times and the
drops, per arm and against TCP DCTCP (DLCP's baseline). Time to accuracy is n/a here: the
emulation's run (docs/results/dlcp_ablation/) trains, this one does not.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from experiments import plots
from experiments.api import Figure, Row, Summary, Table
from experiments.config import ExperimentConfig
from experiments.records import Results
from experiments.stats import fmt_num, percentile
from experiments.stats import summarize as stat_of

TITLE = ("DLCP ablation on a loaded leaf-spine, simulated: gradient push tail, round times and background "
         "FCTs, one mechanism removed at a time")
ROUND_BREAKDOWN = False     # several jobs' rounds at once: the per-job breakdown does not apply
DCTCP = "tcp-dctcp"
FEATURE_KEYS = {"prioritize": "priority", "selective_drop": "selective_drop", "spray": "spray"}

FIGURES = [
    Figure("push_tail_vs_dctcp", "gradient push tail (p99 of every worker's push time), gradlane vs TCP DCTCP",
           "-91.8 (tail FCT vs DCTCP, 144 hosts, simulated)", "%",
           "paired by repetition; negative = shorter tail than DCTCP"),
    Figure("round_p50_speedup", "rounds per second (1 / p50 round time), gradlane over the best baseline",
           "up to +84.3 (training speed, PS, with training)", "%",
           "network only: sized gradients, no compute step, so not the paper's training speed"),
    Figure("bg_fct_p99_vs_dctcp", "background FCT p99, gradlane vs TCP DCTCP", "n/a", "%",
           "the same flows (arrivals, sizes, endpoints) in every arm of a repetition"),
    Figure("loss_without_priority", "gradient push tail without priority vs gradlane", "n/a (only the total is given)",
           "%", "positive = longer tail without the mechanism"),
    Figure("loss_without_selective_drop", "gradient push tail without selective drop vs gradlane",
           "n/a (only the total is given)", "%", "positive = longer tail without the mechanism"),
    Figure("loss_without_spray", "gradient push tail without spraying vs gradlane", "n/a (only the total is given)",
           "%", "positive = longer tail without the mechanism"),
    Figure("time_to_accuracy", "time to target accuracy", "up to +84.3 % speed-up", "",
           "from the emulation (docs/results/dlcp_ablation/): no training at this scale"),
]


def _per_rep(results: Results, arm: str, key: str) -> dict[int, float]:
    return {r["rep"]: r["metrics"][key] for r in results.runs_of(arm)
            if isinstance(r["metrics"].get(key), (int, float))}


def paired_change(results: Results, arm: str, base: str, key: str) -> list[float]:
    """Per repetition: metric `key` of `arm` / of `base` - 1, in percent."""
    a, b = _per_rep(results, arm, key), _per_rep(results, base, key)
    return [100.0 * (a[k] / b[k] - 1.0) for k in a if k in b and b[k]]


def _features(results: Results, arm: str) -> dict[str, bool] | None:
    runs = results.runs_of(arm)
    return runs[0]["metrics"].get("features") if runs else None


def roles(results: Results) -> tuple[list[str], str | None, dict[str, str]]:
    """(baselines, the full gradlane arm, mechanism -> the gradlane arm without it)."""
    baselines, full, without = [], None, {}
    for arm in results.arms():
        features = _features(results, arm)
        if features is None:
            if results.runs_of(arm):
                baselines.append(arm)
            continue
        off = [k for k, on in features.items() if not on]
        if not off and full is None:
            full = arm
        elif len(off) == 1:
            without.setdefault(off[0], arm)
    return baselines, full, without


def _rounds_per_s(results: Results, arm: str) -> dict[int, float]:
    out = {}
    for run in results.runs_of(arm):
        p50 = run["metrics"].get("round_time_p50_s")
        if isinstance(p50, (int, float)) and p50 > 0:
            out[run["rep"]] = 1.0 / p50
    return out


def _best_baseline(results: Results, baselines: list[str]) -> str | None:
    scored = [(stat_of(_rounds_per_s(results, a).values()).mean, a) for a in baselines]
    scored = [(v, a) for v, a in scored if v == v]
    return max(scored)[1] if scored else None


def _bg(run: dict[str, Any], size_class: str, key: str) -> float | None:
    value = ((run["metrics"].get("background") or {}).get("by_size") or {}).get(size_class, {}).get(key)
    return value if isinstance(value, (int, float)) else None


def _ms(stat_values: list[float | None]) -> str:
    s = stat_of(v * 1000.0 if v is not None else None for v in stat_values)
    return s.fmt(3)


def scale_text(config: ExperimentConfig) -> str:
    """The summary's scale line: the simulated fabric, jobs and background."""
    p = config.params
    f, bg = p.get("sim_fabric") or {}, p.get("sim_background") or {}
    return (f"Scale (simulated): leaf-spine {f.get('leaves')} x {f.get('hosts_per_leaf')} hosts, "
            f"{f.get('spines')} spines, {f.get('rate_gbps')} Gb/s links, queues of {config.topology.queue_depth} "
            f"packets; {f.get('jobs')} jobs x {f.get('workers_per_job')} workers, {p.get('sim_gradient_params')} "
            f"parameters per push, {config.rounds} rounds; background load {bg.get('load')} for "
            f"{bg.get('window_ms')} ms; {config.repetitions} repetition(s) per arm, seed {config.seed}.")


def summarize(results: Results, config: ExperimentConfig) -> Summary:
    """Headline rows against DLCP's figures, a per-arm table with the evidence, notes."""
    baselines, full, without = roles(results)
    best = _best_baseline(results, baselines)
    have_dctcp = bool(results.runs_of(DCTCP))
    rows: list[Row] = []
    if full and have_dctcp:
        rows.append(Row("push_tail_vs_dctcp", stat_of(paired_change(results, full, DCTCP, "push_fct_p99_s")),
                        f"arm {full} vs {DCTCP}"))
        rows.append(Row("bg_fct_p99_vs_dctcp", stat_of(paired_change(results, full, DCTCP, "bg_fct_p99_s")),
                        f"arm {full} vs {DCTCP}"))
    else:
        rows.append(Row("push_tail_vs_dctcp", "n/a", "gradlane or tcp-dctcp has no finished run"))
        rows.append(Row("bg_fct_p99_vs_dctcp", "n/a", "gradlane or tcp-dctcp has no finished run"))
    if full and best:
        a, b = _rounds_per_s(results, full), _rounds_per_s(results, best)
        rows.append(Row("round_p50_speedup", stat_of(100.0 * (a[k] / b[k] - 1.0) for k in a if k in b),
                        f"best baseline by rounds/s: {best}"))
    else:
        rows.append(Row("round_p50_speedup", "n/a", "no finished run of gradlane or of a baseline"))
    for feature, label in FEATURE_KEYS.items():
        arm = without.get(feature)
        key = f"loss_without_{label}"
        if full and arm:
            rows.append(Row(key, stat_of(paired_change(results, arm, full, "push_fct_p99_s")), f"arm {arm} vs {full}"))
        else:
            rows.append(Row(key, "n/a", "arm not run"))
    rows.append(Row("time_to_accuracy", "n/a (simulated: gradients are sized, not trained)"))

    table = []
    for arm in results.arms():
        runs = results.runs_of(arm)
        times = [r["round_time_s"] for r in results.rounds_of(arm)
                 if r["rep"] in {x["rep"] for x in runs} and r.get("round_time_s") is not None]
        m = lambda key: [r["metrics"].get(key) for r in runs]  # noqa: E731
        flows = [(r["metrics"].get("background") or {}) for r in runs]
        table.append([
            arm, f"{len(runs)}/{len([r for r in results.runs if r['arm'] == arm])}",
            fmt_num(1000 * percentile(times, 50), 3), fmt_num(1000 * percentile(times, 99), 3),
            _ms(m("push_fct_p50_s")), _ms(m("push_fct_p99_s")),
            _ms(m("bg_fct_mean_s")), _ms(m("bg_fct_p99_s")),
            _ms([_bg(r, "small <100 kB", "fct_p99_s") for r in runs]),
            _ms([_bg(r, "medium 100 kB-10 MB", "fct_mean_s") for r in runs]),
            f"{sum(f.get('completed', 0) for f in flows)}/{sum(f.get('flows', 0) for f in flows)}",
            stat_of(m("tail_drops")).fmt(4), stat_of(m("selective_drops")).fmt(4),
            fmt_num(stat_of(m("selective_drop_fraction_max")).hi, 3),
            stat_of(m("busier_spine_share")).fmt(3),
        ])
    p = config.params
    fabric = p.get("sim_fabric") or {}
    bg = p.get("sim_background") or {}
    notes = [
        f"Fabric: leaf-spine of {fabric.get('leaves')} leaves x {fabric.get('hosts_per_leaf')} hosts and "
        f"{fabric.get('spines')} spines, every link {fabric.get('rate_gbps')} Gb/s, queues of "
        f"{config.topology.queue_depth} packets per priority. {fabric.get('jobs')} jobs run at once, each a PS and "
        f"{fabric.get('workers_per_job')} workers on other leaves than the PS's (every gradient crosses the spines); "
        f"{p.get('sim_gradient_params')} float32 per worker per push and pull; {config.rounds} rounds per job, the "
        f"first push {fabric.get('warmup_ms')} ms after the background starts.",
        f"Background: TCP {bg.get('cc')} flows between random pairs of the other hosts, Poisson arrivals at "
        f"{bg.get('load')} of each host's link rate for {bg.get('window_ms')} ms, sizes from "
        f"{bg.get('size_cdf', 'web_search')} (DCTCP's web-search distribution); the same flows in every arm of a "
        f"repetition. An FCT counts when the flow completed within {bg.get('drain_ms')} ms after the window; "
        "'flows done' = completed / arrived over the repetitions. Size classes: small < 100 kB, medium 100 kB-10 MB.",
        "Push time (DLCP's gradient FCT): per worker and round, from the worker starting its push until the PS "
        "had all of it (TCP) or until the worker had the PS's STOP (gradlane, MLT: the push's bound met, half a "
        "round trip later). Round time: first push start to the last worker's pull. Percentiles of rounds are "
        "pooled over jobs and repetitions; ms figures are mean ± sd over repetitions of the per-run figure.",
        "Evidence: 'selective drops' are the switches' budgeted drops, 'max drop fraction' the largest share of a "
        "switch's classified push packets it dropped selectively (the bound is 10 %); 'busier spine share' is the "
        "gradient push packets the busiest spine classified / all spines (1/spines = even; n/a for baselines, "
        "whose packets no job policy classifies).",
        "TCP arms: ns-3's TCP with Linux's 200 ms minimum RTO; their rounds after the background's window run on a "
        "fabric without new background flows (simulating the background for seconds would take hours).",
    ]
    headers = ["arm", "runs ok", "p50 round ms", "p99 round ms", "push p50 ms", "push p99 ms", "bg FCT mean ms",
               "bg FCT p99 ms", "bg small p99 ms", "bg medium mean ms", "bg flows done", "tail drops",
               "selective drops", "max drop fraction", "busier spine share"]
    return Summary(rows=rows, tables=[Table("Per arm (simulated)", headers, table)], notes=notes)


def plot(results: Results, config: ExperimentConfig, out_dir: Path) -> list[Path]:
    """Round-time CDF; push tail, background FCT p99 and tail drops per arm."""
    arms = results.arms()

    def per_run(key: str, scale: float = 1000.0) -> dict[str, list[float]]:
        return {a: [v * scale for v in results.metric(a, key) if isinstance(v, (int, float))] for a in arms}

    return [
        plots.round_time_cdf(results, out_dir / "round_time_cdf.png", arms,
                             title="Round time CDF (4 jobs, loaded leaf-spine, simulated)"),
        plots.bars(per_run("push_fct_p99_s"), out_dir / "push_tail.png", "ms",
                   "Gradient push tail: p99 of the workers' push times", log_y=True),
        plots.bars(per_run("bg_fct_p99_s"), out_dir / "background_fct_p99.png", "ms",
                   "Background flows: p99 FCT"),
        plots.bars(per_run("tail_drops", 1.0), out_dir / "tail_drops.png", "packets per run",
                   "Queue tail drops (all switches)"),
    ]
