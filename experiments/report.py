"""summary.md of one experiment run: the paper's headline figures beside ours, the run
conditions per arm (flagged where a switch process itself dropped packets), and the plots."""
from __future__ import annotations

import shlex
import shutil
from pathlib import Path
from types import ModuleType

from experiments import breakdown, crossval, switch_capacity, tcp_baselines
from experiments import config as configs
from experiments.api import Figure, Row, Summary, Table
from experiments.config import ExperimentConfig
from experiments.records import Results, ResultsDir
from experiments.stats import Stat, fmt_num, summarize
from experiments.training import ROUND_TIME_MEANING

FLAG = "⚠ switch dropped"
PUBLISH_ROOT = Path("docs/results")


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def markdown_table(headers: list[str], rows: list[list[str]]) -> list[str]:
    """A markdown table's lines."""
    out = ["| " + " | ".join(_cell(h) for h in headers) + " |",
           "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return out


def headline_rows(figures: list[Figure], summary: Summary) -> list[list[str]]:
    """| figure | paper | gradlane (mean ± sd, n) | note |, one per Row, in FIGURES order."""
    by_key = {f.key: f for f in figures}
    order = {f.key: i for i, f in enumerate(figures)}
    out = []
    for row in sorted(summary.rows, key=lambda r: order.get(r.key, len(order))):
        fig = by_key.get(row.key, Figure(row.key, row.key, "n/a"))
        ours = row.ours.fmt(row.digits, fig.unit) if isinstance(row.ours, Stat) else str(row.ours)
        if row.flagged:
            ours += f" {FLAG}"
        note = "; ".join(n for n in (fig.note, row.note) if n)
        paper = f"{fig.paper} {fig.unit}".strip() if fig.unit and fig.paper[-1:].isdigit() else fig.paper
        out.append([fig.label, paper, ours, note])
    return out


def conditions_rows(results: Results) -> list[list[str]]:
    """Per arm: runs ok/total, load average, switch receive drops, switch CPU, flag."""
    out = []
    for arm in results.arms():
        runs = [r for r in results.runs if r["arm"] == arm]
        cond = [r.get("conditions", {}) for r in runs]
        load = summarize(c.get("load1_end") for c in cond)
        drops = [c.get("switch_rx_drops_total") for c in cond]
        known = [d for d in drops if d is not None]
        cpu = summarize(c.get("switch_cpu_pct_max") for c in cond)
        flagged = any(c.get("switch_dropped") for c in cond)
        out.append([arm, f"{sum(1 for r in runs if r.get('ok'))}/{len(runs)}", fmt_num(load.mean, 3),
                    str(sum(known)) if known else "n/a", fmt_num(cpu.mean, 3) + (f" (max {fmt_num(cpu.hi, 3)})" if cpu.n else ""),
                    FLAG if flagged else "ok"])
    return out


def config_file(config: ExperimentConfig) -> str:
    """The config file the run was made from (a simulated run records it; else its variant's or
    the experiment's default)."""
    recorded = config.params.get("config_file")
    if recorded:
        return str(recorded)
    return f"experiments/configs/{configs.default_path(config.name, config.variant).name}"


def command_line(config: ExperimentConfig) -> str:
    """How to reproduce this run."""
    quick = " --quick" if config.is_quick else ""
    selected = config.params.get("arms_selected")
    arms = [f"--arms {','.join(selected)}"] if selected else []
    arms += [f"--set {shlex.quote(s)}" for s in config.params.get("cli_settings") or ()]
    if config.params.get("backend") == "ns3":
        return (f"python -m experiments {config.name}{quick} --backend ns3 --config {config_file(config)}"
                + "".join(f" {a}" for a in arms))
    args = [*([f"--config {config_file(config)}"] if config.variant else []),
            *(["--quick"] if config.is_quick else []), *arms]
    if not args:
        return f"make experiment NAME={config.name}"
    joined = " ".join(args)
    return f"make experiment NAME={config.name} ARGS=" + (f'"{joined}"' if " " in joined else joined)


def write_summary(module: ModuleType, config: ExperimentConfig, results: Results,
                  summary: Summary, plots: list[Path], path: Path) -> Path:
    """Write summary.md; returns its path."""
    figures: list[Figure] = list(getattr(module, "FIGURES", []))
    title = getattr(module, "title", None)      # a module whose title depends on its arms
    lines = [f"# {title(config) if callable(title) else getattr(module, 'TITLE', config.name)}", ""]
    if config.description:
        lines += [config.description.strip(), ""]
    topo = config.topology
    scale = getattr(module, "scale_text", None)
    lines += [f"Reproduce: `{command_line(config)}` (config `{config_file(config)}`"
              + (", quick mode: a smoke run, not a measurement" if config.is_quick else "") + ").",
              scale(config) if scale else
              f"Scale: topology {topo.name}, {topo.workers} workers, bottleneck "
              + (f"{fmt_num(topo.bottleneck_pps)} pps (a queue rate in packets, as BMv2's: a packet "
                 f"costs one whatever its size)" if topo.bottleneck_pps else "unlimited")
              + f", queue "
              f"{topo.queue_depth} packets, {config.rounds} rounds, {config.repetitions} repetition(s) per arm, "
              f"arms alternating, seed {config.seed}.", ""]
    lines += switch_capacity.summary_lines(path.parent)
    paper = getattr(module, "PAPER", "")
    lines += ["## Headline figures" + (f" ({paper})" if paper else ""), ""]
    lines += markdown_table(["figure", "paper", "gradlane (mean ± sd, n)", "note"],
                            headline_rows(figures, summary))
    lines += [""]
    for table in summary.tables:
        lines += [f"## {table.title}", ""] + markdown_table(table.headers, table.rows) + [""]
    lines += ["## Run conditions", "",
              "Load average at the end of each run, the switch processes' own receive drops (not P4 "
              "queue drops) and their CPU use (% of one core). A flagged arm measured the switch's CPU, "
              "not only the queue under study.", ""]
    lines += markdown_table(["arm", "runs ok", "load (1 min)", "switch rx drops", "switch CPU %", "flag"],
                            conditions_rows(results))
    failed = [r for r in results.runs if not r.get("ok")]
    if failed:
        lines += ["", "Failed runs: " + "; ".join(f"{r['arm']} rep {r['rep'] + 1}: {r.get('error')}"
                                                  for r in failed)]
    if summary.notes:
        lines += ["", "## Notes", ""] + [f"- {n}" for n in summary.notes]
    if plots:
        lines += ["", "## Plots", ""] + [f"![{p.stem}]({p.name})" for p in plots]
    path.write_text("\n".join(lines) + "\n")
    return path


def breakdown_section(results: Results, config: ExperimentConfig, out_dir: Path) -> tuple[Table, Path | None]:
    """Every arm's per-round breakdown (experiments.breakdown) as a table and a stacked bar plot."""
    known = {a.name: a for a in config.arms}
    rates = {arm: config.topology_of(known[arm]).bottleneck_pps if arm in known else None
             for arm in results.arms()}
    parts = breakdown.per_arm(results, rates)
    title = ("Per-round breakdown (ms, mean per round; the workers' own split, means over workers; "
             f"other = round time minus the parts; wire floor = one round's push packets / the "
             f"bottleneck's packets/s; a TCP worker's push is the time to hand its bytes to the kernel, "
             f"so TCP's transfer shows as pull and waiting). {ROUND_TIME_MEANING}")
    plot = breakdown.plot(parts, out_dir / "round_breakdown.png") if parts else None
    return Table(title, breakdown.TABLE_HEADERS, breakdown.table_rows(parts)), plot


def _bounds_text(values: object, scope: object) -> str:
    if not isinstance(values, list) or not values:
        return "n/a"
    if all(v == 0 for v in values):
        return "reliable (0 on every layer)"
    if scope == "tensor" and len(set(values)) == 1:
        return f"{100 * values[0]:.3g}% of the tensor"
    return ", ".join(f"{100 * v:.3g}%" for v in values) + (" per layer" if scope == "layer" else "")


def semantics_table(results: Results) -> Table:
    """Per arm: its transport and the push and pull bounds its PS agent set up (first run)."""
    rows = []
    for arm in results.arms():
        runs = results.runs_of(arm) or [r for r in results.runs if r["arm"] == arm]
        m = runs[0].get("metrics", {}) if runs else {}
        transport = str(runs[0].get("transport", "?")) if runs else "?"
        if transport == "tcp":      # the agents log bounds they do not use: TCP delivers everything
            rows.append([arm, transport, "reliable (TCP)", "reliable (TCP)"])
        else:
            scope = m.get("bound_scope")
            rows.append([arm, transport, _bounds_text(m.get("push_bounds"), scope),
                         _bounds_text(m.get("pull_bounds"), scope)])
    return Table("What each arm's stages may lose (the bounds of the parameter server's start record, "
                 "over the tensor or per layer; tcp: reliable by construction)",
                 ["arm", "transport", "push", "pull"], rows)


def finish(module: ModuleType, config: ExperimentConfig, rd: ResultsDir) -> tuple[Path, list[Path]]:
    """Summarize and plot everything in `rd`: summary.md and the PNGs, in `rd`; every summary
    also states what each arm's push and pull may lose, gradlane against TCP at the kernel's RTO
    and at a tuned RTO side by side (`tcp_baselines`; a module with TCP_BASELINES = False shows
    them its own way), and gets the per-round breakdown. An
    emulation run of a cross-validated experiment also writes its reference (crossval.json); a
    simulated run at the emulation's scale gets the cross-validation against it (`crossval`)."""
    results = rd.load()
    summary = module.summarize(results, config)
    plots = [Path(p) for p in module.plot(results, config, rd.path)]
    summary.tables.append(semantics_table(results))
    if getattr(module, "TCP_BASELINES", True):
        baselines = tcp_baselines.table(results, config)
        if baselines is not None:
            summary.tables.append(baselines)
    if getattr(module, "ROUND_BREAKDOWN", True):    # False: rounds of several jobs at once
        table, plot = breakdown_section(results, config, rd.path)
        summary.tables.append(table)
        if plot is not None:
            plots.append(plot)
    if config.params.get("backend") == "ns3":
        xval = crossval.section(results, config)
        if xval is not None:
            summary.tables.append(xval.table)
            summary.notes += xval.notes
    elif config.name in crossval.EXPERIMENTS and results.runs:
        crossval.write_reference(results, config, rd.path)
    return write_summary(module, config, results, summary, plots, rd.summary_path), plots


def publish(name: str, rd: ResultsDir, plots: list[Path], root: Path = PUBLISH_ROOT) -> Path:
    """Copy summary.md, the PNGs and an emulation run's crossval.json to docs/results/NAME/,
    replacing the previous summary.md and plots; the folder's hand-written pages (README.md,
    earlier summaries kept under other names) stay."""
    dest = root / name
    if dest.exists():
        for old in dest.iterdir():
            if old.is_file() and (old.suffix == ".png" or old.name == "summary.md"):
                old.unlink()
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy2(rd.summary_path, dest / "summary.md")
    for p in plots:
        shutil.copy2(p, dest / p.name)
    if (rd.path / crossval.REFERENCE).exists():
        shutil.copy2(rd.path / crossval.REFERENCE, dest / crossval.REFERENCE)
    return dest


def figure_keys(module: ModuleType) -> list[str]:
    """The keys of a module's FIGURES."""
    return [f.key for f in getattr(module, "FIGURES", [])]


def missing_rows(module: ModuleType, summary: Summary) -> list[str]:
    """FIGURES keys without a summary row."""
    have = {r.key for r in summary.rows}
    return [k for k in figure_keys(module) if k not in have]


__all__ = ["finish", "publish", "write_summary", "markdown_table", "missing_rows", "Row"]
