"""Plots shared by the experiments (matplotlib, Agg backend, PNG files).

Each function draws one figure from a `Results` (or plain series) and returns the file written.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Iterable, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the backend)
import numpy as np  # noqa: E402
from matplotlib.colors import TwoSlopeNorm  # noqa: E402

from experiments.records import Results  # noqa: E402
from experiments.stats import summarize  # noqa: E402

DPI = 110


def _finish(fig: "plt.Figure", path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def _legend(ax: "plt.Axes", **kwargs: object) -> None:
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8, **kwargs)


def _ok(values: Iterable[float | None]) -> list[float]:
    return [float(v) for v in values if v is not None and math.isfinite(float(v))]


def round_time_cdf(results: Results, path: Path, arms: Sequence[str] | None = None,
                   title: str = "Round time CDF", log_x: bool = True) -> Path:
    """CDF of round_time_s per arm (all repetitions pooled)."""
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for arm in arms or results.arms():
        times = sorted(_ok(r.get("round_time_s") for r in results.rounds_of(arm)))
        if not times:
            continue
        ys = [(i + 1) / len(times) for i in range(len(times))]
        ax.step(times, ys, where="post", label=f"{arm} (n={len(times)})")
    if log_x:
        ax.set_xscale("log")
    ax.set_xlabel("round time (s)")
    ax.set_ylabel("fraction of rounds")
    ax.set_ylim(0, 1.02)
    ax.grid(True, alpha=0.3)
    ax.set_title(title)
    _legend(ax, loc="lower right")
    return _finish(fig, path)


def time_to_accuracy(results: Results, path: Path, arms: Sequence[str] | None = None,
                     target: float | None = None, title: str = "Test accuracy over training time") -> Path:
    """Accuracy vs time since training start, one line per arm x repetition (same colour per arm)."""
    fig, ax = plt.subplots(figsize=(7, 4.2))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, arm in enumerate(arms or results.arms()):
        colour = colours[i % len(colours)]
        for j, run in enumerate(results.runs_of(arm)):
            pts = [(r["t_s"], r["accuracy"]) for r in results.rounds_of(arm, run["rep"])
                   if r.get("accuracy") is not None and r.get("t_s") is not None]
            if pts:
                xs, ys = zip(*pts)
                ax.plot(xs, ys, color=colour, alpha=0.8, marker=".", label=arm if j == 0 else None)
    if target is not None:
        ax.axhline(target, color="grey", linestyle="--", linewidth=1, label=f"target {target:g}")
    ax.set_xlabel("training time (s)")
    ax.set_ylabel("test accuracy")
    ax.grid(True, alpha=0.3)
    ax.set_title(title)
    _legend(ax, loc="lower right")
    return _finish(fig, path)


def series_over_time(series: dict[str, tuple[Sequence[float], Sequence[float]]], path: Path,
                     xlabel: str = "time (s)", ylabel: str = "queue depth (packets)",
                     title: str = "Queue length over time", hline: float | None = None) -> Path:
    """Lines of (x, y) per label, e.g. queue depth over time per arm."""
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for label, (xs, ys) in series.items():
        if len(xs):
            ax.plot(xs, ys, label=label, linewidth=1)
    if hline is not None:
        ax.axhline(hline, color="grey", linestyle="--", linewidth=1)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    ax.set_title(title)
    _legend(ax)
    return _finish(fig, path)


def queue_over_time(results: Results, path: Path, arms: Sequence[str] | None = None, rep: int = 0,
                    title: str = "Bottleneck queue depth per round") -> Path:
    """queue_depth of the round records (where known) against t_s, one repetition per arm."""
    series = {}
    for arm in arms or results.arms():
        pts = [(r["t_s"], r["queue_depth"]) for r in results.rounds_of(arm, rep)
               if r.get("queue_depth") is not None and r.get("t_s") is not None]
        if pts:
            xs, ys = zip(*pts)
            series[arm] = (xs, ys)
    return series_over_time(series, path, title=title)


def bars(values: dict[str, Sequence[float]], path: Path, ylabel: str, title: str,
         log_y: bool = False, flagged: Iterable[str] = ()) -> Path:
    """One bar per label: mean with a ± standard-deviation error bar; the repetitions as dots.
    Labels in `flagged` (a switch process dropped packets) are hatched."""
    flagged = set(flagged)
    labels = list(values)
    stats = [summarize(values[k]) for k in labels]
    fig, ax = plt.subplots(figsize=(max(5.0, 0.8 * len(labels) + 2), 4.2))
    xs = range(len(labels))
    means = [s.mean if s.n else 0.0 for s in stats]
    errs = [s.sd if s.n > 1 else 0.0 for s in stats]
    bars_ = ax.bar(xs, means, yerr=errs, capsize=4, color="#6baed6", edgecolor="black", linewidth=0.6)
    for i, label in enumerate(labels):
        if label in flagged:
            bars_[i].set_hatch("//")
        pts = _ok(values[label])
        ax.scatter([i] * len(pts), pts, color="black", s=10, zorder=3)
    ax.set_xticks(list(xs))
    ax.set_xticklabels(labels, rotation=30, ha="right", fontsize=8)
    if log_y:
        ax.set_yscale("log")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, axis="y", alpha=0.3)
    return _finish(fig, path)


def lines(series: dict[str, tuple[Sequence[float], Sequence[float], Sequence[float]]], path: Path,
          xlabel: str, ylabel: str, title: str, log_y: bool = False,
          level: tuple[float, str] | None = None) -> Path:
    """One line per label through (x, mean) with ± sd error bars: e.g. a trend over worker counts;
    `level` (y, label) draws a dashed horizontal line, e.g. a tolerance."""
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for label, (xs, ys, sds) in series.items():
        if len(xs):
            ax.errorbar(xs, ys, yerr=sds, marker="o", capsize=3, label=label)
    if level is not None:
        ax.axhline(level[0], color="grey", linestyle="--", linewidth=1, label=level[1])
    if log_y:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    _legend(ax)
    return _finish(fig, path)


def stacked_bars(stacks: dict[str, dict[str, float]], marks: dict[str, float | None], path: Path,
                 ylabel: str, title: str, mark_label: str) -> Path:
    """One bar per label stacked from its parts (the same part names in every bar), with an
    optional horizontal mark per bar (e.g. a lower bound)."""
    labels = list(stacks)
    parts = list(dict.fromkeys(p for stack in stacks.values() for p in stack))
    fig, ax = plt.subplots(figsize=(max(5.0, 0.8 * len(labels) + 3), 4.4))
    xs = list(range(len(labels)))
    bottom = [0.0] * len(labels)
    for part in parts:
        heights = [stacks[label].get(part, 0.0) for label in labels]
        ax.bar(xs, heights, bottom=bottom, label=part, edgecolor="black", linewidth=0.4)
        bottom = [b + h for b, h in zip(bottom, heights)]
    marked = False
    for x, label in zip(xs, labels):
        value = marks.get(label)
        if value is not None:
            ax.hlines(value, x - 0.45, x + 0.45, colors="black", linestyles="--", linewidth=1.4,
                      label=None if marked else mark_label)
            marked = True
    ax.set_xticks(xs)
    ax.set_xticklabels(labels, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, axis="y", alpha=0.3)
    _legend(ax, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return _finish(fig, path)


def heatmap(cells: dict[tuple[float, float], tuple[float | None, str]], rows: Sequence[float],
            cols: Sequence[float], path: Path, title: str, row_label: str, col_label: str,
            center: float | None = None, cmap: str = "RdYlGn") -> Path:
    """A grid of cells (row value, column value) -> (number or None, text shown in the cell);
    colours diverge around `center` when given. Empty cells stay white with their text."""
    grid = np.full((len(rows), len(cols)), np.nan)
    for (r, c), (value, _) in cells.items():
        if r in rows and c in cols and value is not None and math.isfinite(value):
            grid[list(rows).index(r), list(cols).index(c)] = value
    fig, ax = plt.subplots(figsize=(1.6 * len(cols) + 2.4, 0.75 * len(rows) + 1.8))
    finite = grid[np.isfinite(grid)]
    norm = None
    if center is not None and finite.size:
        low, high = float(finite.min()), float(finite.max())
        norm = TwoSlopeNorm(vcenter=center, vmin=min(low, center - 1e-9), vmax=max(high, center + 1e-9))
    image = ax.imshow(np.ma.masked_invalid(grid), cmap=cmap, norm=norm, aspect="auto")
    for (r, c), (_, text) in cells.items():
        if r in rows and c in cols:
            ax.text(list(cols).index(c), list(rows).index(r), text, ha="center", va="center", fontsize=8)
    ax.set_xticks(range(len(cols)))
    ax.set_xticklabels([f"{c:g}" for c in cols])
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([f"{r:g}" for r in rows])
    ax.set_xlabel(col_label)
    ax.set_ylabel(row_label)
    ax.set_title(title, fontsize=10)
    if finite.size:
        fig.colorbar(image, ax=ax, shrink=0.85)
    return _finish(fig, path)
