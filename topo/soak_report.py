"""The soak's samples turned into figures: one series per process, switch, controller figure,
log file and job; the least-squares slope of each after warm-up; the verdicts (per-process RSS
against the growth bar, the counts that must stay bounded); `summary.md` and the plots.

A sample is one JSON object (one line of `samples.jsonl`)::

    {"t": 1764338400.0, "elapsed_s": 60.0, "load": [1.2, 1.1, 0.9],
     "procs": {"s1 (switch)": {"pid": 10, "rss_kib": 51200, "fds": 31, "threads": 9}, ...},
     "switches": {"s1": 49, ...},
     "controller": {"state_file_bytes": 1354, "tcp_established": 2, "jobs_view_bytes": 800},
     "logs": {"controller.log": 20480, ...},
     "rounds": {"1": 120, "2": 118}}
"""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the backend)

RSS_BAR = 0.05       # no per-process RSS growth above 5% after warm-up
BOUNDED_BAR = 0.05   # counts that must stay flat: fitted growth after warm-up at most 5%
DPI = 110

PROC_METRICS = (("rss_kib", "RSS", "MiB", 1 / 1024), ("fds", "open fds", "fds", 1.0),
                ("threads", "threads", "threads", 1.0))
CONTROLLER_METRICS = (("state_file_bytes", "state file", "bytes"),
                      ("tcp_established", "TCP connections (gRPC channels)", "connections"),
                      ("jobs_view_bytes", "`gradctl jobs` view", "bytes"))


@dataclass
class Series:
    """One figure over time: (seconds since the jobs started, value) points."""

    group: str      # process | switch | controller | logs | job
    name: str       # e.g. "s1 (switch)", "controller.log", "job 1"
    metric: str     # e.g. "RSS", "open fds", "table entries"
    unit: str
    points: list[tuple[float, float]] = field(default_factory=list)
    pids: list[int] = field(default_factory=list)
    cap: float | None = None   # a documented cap (entries kept): bounded while under it

    @property
    def label(self) -> str:
        """`name metric`, as tables and verdict lines say it."""
        return f"{self.metric} of {self.name}"


@dataclass
class Trend:
    """A series after warm-up: its first and last value there, slope and fitted change."""

    start: float | None          # first value of the whole run
    warm: float | None           # first value after warm-up
    end: float | None            # last value
    slope_per_h: float | None    # least squares over the post-warm-up points
    fitted_change: float | None  # slope x post-warm-up span / fitted value at its start
    points: int                  # post-warm-up points

    @property
    def end_change(self) -> float | None:
        """Last value against the first after warm-up (a fraction)."""
        if self.warm is None or self.end is None or self.warm == 0:
            return None
        return (self.end - self.warm) / self.warm


def least_squares(points: Sequence[tuple[float, float]]) -> tuple[float, float] | None:
    """(slope, intercept) of the least-squares line through ``points``; None for fewer than two
    distinct x."""
    n = len(points)
    if n < 2:
        return None
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    if sxx == 0:
        return None
    slope = sum((x - mx) * (y - my) for x, y in points) / sxx
    return slope, my - slope * mx


def trend(series: Series, warm_up_s: float) -> Trend:
    """The series' figures after ``warm_up_s`` seconds (slope in units per hour)."""
    pts = series.points
    after = [(x, y) for x, y in pts if x >= warm_up_s]
    fit = least_squares(after)
    slope_h = change = None
    if fit is not None:
        slope, intercept = fit
        slope_h = slope * 3600.0
        base = slope * after[0][0] + intercept
        if base > 0:
            change = slope * (after[-1][0] - after[0][0]) / base
    return Trend(start=pts[0][1] if pts else None, warm=after[0][1] if after else None,
                 end=pts[-1][1] if pts else None, slope_per_h=slope_h, fitted_change=change,
                 points=len(after))


def build_series(samples: Sequence[dict[str, Any]]) -> list[Series]:
    """Every series the samples hold, in a stable order (processes, switches, controller, logs,
    jobs' cumulative rounds and rounds per minute)."""
    table: dict[tuple[str, str, str], Series] = {}

    def add(group: str, name: str, metric: str, unit: str, x: float, y: float | None,
            pid: int | None = None) -> None:
        if y is None:
            return
        s = table.setdefault((group, name, metric), Series(group, name, metric, unit))
        s.points.append((x, float(y)))
        if pid is not None:
            s.pids.append(pid)

    for smp in samples:
        x = float(smp["elapsed_s"])
        for name, proc in sorted(smp.get("procs", {}).items()):
            for key, metric, unit, scale in PROC_METRICS:
                v = proc.get(key)
                add("process", name, metric, unit, x, None if v is None else v * scale, proc.get("pid"))
        for sw, entries in sorted(smp.get("switches", {}).items()):
            add("switch", sw, "table entries", "entries", x, entries)
        for key, metric, unit in CONTROLLER_METRICS:
            add("controller", "controller", metric, unit, x, smp.get("controller", {}).get(key))
        for metric, (count, cap) in sorted((smp.get("controller", {}).get("capped") or {}).items()):
            add("controller", "controller", metric, "entries", x, count)
            table[("controller", "controller", metric)].cap = cap
        logs = smp.get("logs", {})
        for name, size in sorted(logs.items()):
            add("logs", name, "size", "MiB", x, size / 2 ** 20)
        if logs:
            add("logs", "all logs", "size", "MiB", x, sum(logs.values()) / 2 ** 20)
        if smp.get("load"):
            add("machine", "machine", "load average (1 min)", "", x, smp["load"][0])
        for job, rounds in sorted(smp.get("rounds", {}).items(), key=lambda kv: int(kv[0])):
            add("job", f"job {job}", "rounds", "rounds", x, rounds)
    out = list(table.values())
    for s in [s for s in out if s.group == "job"]:
        rate = Series("job", s.name, "rounds per minute", "rounds/min")
        for (x0, y0), (x1, y1) in zip(s.points, s.points[1:]):
            if x1 > x0:
                rate.points.append((x1, 60.0 * (y1 - y0) / (x1 - x0)))
        out.append(rate)
    return out


@dataclass
class Check:
    """One verdict: what was checked, passed or not, and its one-line reason."""

    label: str
    ok: bool | None   # None: too few samples to say
    reason: str


def rss_check(series: Series, warm_up_s: float, bar: float = RSS_BAR, end_s: float | None = None) -> Check:
    """A process's RSS after warm-up against ``bar``: both the last value against the first after
    warm-up and the least-squares line's change over that span must stay at or below it, and
    the process must be the same one throughout (no restart) and, when ``end_s`` (the last
    sample's time) is given, still there at the end."""
    t = trend(series, warm_up_s)
    if len(set(series.pids)) > 1:
        return Check(series.name, False, f"restarted (pids {', '.join(map(str, dict.fromkeys(series.pids)))})")
    if end_s is not None and series.points and series.points[-1][0] < end_s:
        return Check(series.name, False, f"gone after +{series.points[-1][0] / 60:.1f} min")
    if t.end_change is None or t.fitted_change is None:
        return Check(series.name, None, f"too few samples after warm-up ({t.points})")
    worst = max(t.end_change, t.fitted_change)
    ok = worst <= bar
    return Check(series.name, ok, f"{_pct(t.end_change)} end vs after warm-up, {_pct(t.fitted_change)} "
                                  f"fitted ({'within' if ok else 'ABOVE'} {bar:.0%})")


def bounded_check(series: Series, warm_up_s: float, bar: float = BOUNDED_BAR) -> Check:
    """A count that must stay flat (fds, threads, entries, connections, state size): its fitted
    growth after warm-up at most ``bar``."""
    t = trend(series, warm_up_s)
    if t.fitted_change is None:
        if t.points >= 2 and t.warm == t.end == 0:
            return Check(series.label, True, "0 throughout")
        return Check(series.label, None, f"too few samples after warm-up ({t.points})")
    ok = t.fitted_change <= bar
    return Check(series.label, ok, f"fitted {_pct(t.fitted_change)} after warm-up "
                                   f"({'flat' if ok else 'GROWS'})")


def capped_check(series: Series) -> Check:
    """A count with a documented cap (entries a bounded log keeps): bounded while it never
    went above the cap, however it grew on the way there."""
    assert series.cap is not None
    most = max(v for _, v in series.points)
    ok = most <= series.cap
    return Check(series.label, ok, f"at most {most:.0f} of its cap {series.cap:.0f} "
                                   f"({'bounded' if ok else 'ABOVE its cap'})")


# The size series whose contents are capped counts (the capped series name these prefixes):
# a size that grows by the fitted rule is bounded when every capped count in it stayed under
# its cap; the fitted verdict stays in the reason.
CAPPED_SIZES = {"state file": "state file: ", "`gradctl jobs` view": "`gradctl jobs` view: "}


def checks(series: Sequence[Series], warm_up_s: float) -> tuple[list[Check], list[Check]]:
    """(per-process RSS verdicts, bounded-count verdicts). Log sizes grow by design and
    rounds depend on the machine's load: neither is checked. A capped count is judged against
    its cap; a size made of capped counts is bounded when the fitted rule flags it but every
    count in it stayed under its cap (samples without counts keep the fitted verdict)."""
    end = max((s.points[-1][0] for s in series if s.points), default=None)
    rss = [rss_check(s, warm_up_s, end_s=end) for s in series if s.group == "process" and s.metric == "RSS"]
    capped = {s.metric: capped_check(s) for s in series if s.cap is not None and s.points}
    bounded = []
    for s in series:
        if not ((s.group == "process" and s.metric != "RSS") or s.group in ("switch", "controller")):
            continue
        if s.cap is not None:
            if s.points:
                bounded.append(capped[s.metric])
            continue
        check = bounded_check(s, warm_up_s)
        prefix = CAPPED_SIZES.get(s.metric) if s.group == "controller" else None
        inner = [c for metric, c in capped.items() if prefix and metric.startswith(prefix)]
        if check.ok is False and inner and all(c.ok for c in inner):
            check = Check(check.label, True, f"{check.reason} by the fitted rule; bounded: its capped "
                                             f"contents stayed under their caps")
        bounded.append(check)
    return rss, bounded


def failures(series: Sequence[Series], warm_up_s: float, ended_early: Sequence[int]) -> list[str]:
    """Why the soak failed, one phrase each (empty: it passed)."""
    rss, bounded = checks(series, warm_up_s)
    out = [f"job {j} ended early" for j in ended_early]
    out += [f"RSS of {c.label}: {c.reason}" for c in rss if c.ok is False]
    out += [f"{c.label}: {c.reason}" for c in bounded if c.ok is False]
    return out


# -- markdown ------------------------------------------------------------------------------------
def _pct(v: float | None) -> str:
    return "n/a" if v is None else f"{100 * v:+.1f}%"


def _num(v: float | None, unit: str = "") -> str:
    if v is None:
        return "n/a"
    text = f"{v:.0f}" if float(v).is_integer() or abs(v) >= 1000 else f"{v:.1f}" if abs(v) >= 10 else f"{v:.2f}"
    return f"{text} {unit}".rstrip()


def _slope(v: float | None, unit: str) -> str:
    if v is None:
        return "n/a"
    return f"{v:+.0f} {unit}/h" if abs(v) >= 1000 else f"{v:+.3g} {unit}/h"


def render_markdown(samples: Sequence[dict[str, Any]], meta: dict[str, Any]) -> str:
    """`summary.md` of a soak: ``meta`` carries command, config, warm_up_s, interval_s, minutes,
    ended_early (job ids), load_start / load_end ([1, 5, 15] min), started (UTC text), plots."""
    series = build_series(samples)
    warm = float(meta["warm_up_s"])
    fails = failures(series, warm, meta.get("ended_early", []))
    rss, bounded = checks(series, warm)
    span = samples[-1]["elapsed_s"] if samples else 0.0
    lines = [f"# Soak: {meta.get('minutes', 0):g} minutes, two training jobs and background TCP", "",
             f"Command: `{meta.get('command', '')}`", "",
             f"Started {meta.get('started', 'n/a')}; {len(samples)} samples every "
             f"{meta.get('interval_s', 0):g} s over {span / 60:.1f} min from the jobs' start; "
             f"warm-up {warm:g} s (slopes and verdicts use the samples after it).", ""]
    for key, value in meta.get("config", {}).items():
        lines.append(f"- {key}: {value}")
    lines += ["", f"Machine: {meta.get('cpus', 'n/a')} CPUs, shared; load average (1, 5, 15 min) "
              f"{_load(meta.get('load_start'))} at the start, {_load(meta.get('load_end'))} at the end. "
              "RSS, fds, threads, entries and sizes do not depend on load; rounds per minute do.", ""]
    lines += ["## Verdict", "",
              ("**PASS**: both jobs ran to the end, no process's RSS grew above "
               f"{RSS_BAR:.0%} after warm-up, and every count stayed bounded." if not fails
               else "**FAIL**: " + "; ".join(fails) + "."), ""]
    lines += _process_table(series, rss, warm)
    lines += _other_table("Switches", [s for s in series if s.group == "switch"], warm, bounded)
    lines += ["Counters' memory: the embedded switch exposes no cheap per-counter memory figure; "
              "its indexed counters are arrays of fixed size allocated when the program loads and "
              "its direct counters live in their table entries, so they are covered by the "
              "switch's table entries and RSS above.", ""]
    controller = [s for s in series if s.group == "controller"]
    lines += _other_table("Controller", controller, warm, bounded)
    if lines[-1] == "":
        lines.pop()
    lines += ["", "A count with a documented cap (entries a bounded log keeps) is bounded while it "
              "stays under the cap; a size made of such counts (the state file, the `gradctl jobs` "
              "view) is bounded when the fitted rule flags it but every count in it stayed under its "
              "cap, the fitted verdict kept in its reason. "
              + ("" if any(s.cap is not None for s in controller) else
                 "These samples carry no such counts: the fitted rule alone decides."), ""]
    logs = [s for s in series if s.group == "logs"]
    lines += _other_table("Log files (grow by design: not checked)",
                          sorted(logs, key=lambda s: -(s.points[-1][1] if s.points else 0))[:12], warm, [])
    lines += _other_table("Jobs (depend on load: not checked)",
                          [s for s in series if s.group in ("job", "machine")], warm, [])
    if meta.get("plots"):
        lines += ["## Plots", ""] + [f"![{p}]({p})" for p in meta["plots"]] + [""]
    return "\n".join(lines)


def _load(load: Sequence[float] | None) -> str:
    return "n/a" if not load else ", ".join(f"{v:.2f}" for v in load)


def _process_table(series: Sequence[Series], rss: Sequence[Check], warm: float) -> list[str]:
    by = {(s.name, s.metric): s for s in series if s.group == "process"}
    verdict = {c.label: c for c in rss}
    lines = ["## Processes", "",
             "| process | RSS start / after warm-up / end (MiB) | RSS slope | fds start / end | fds slope "
             "| threads start / end | threads slope | RSS verdict |", "|---|---|---|---|---|---|---|---|"]
    for name in sorted({n for n, _ in by}):
        cells = [name]
        for metric in ("RSS", "open fds", "threads"):
            s = by.get((name, metric))
            t = trend(s, warm) if s else None
            if t is None:
                cells += ["n/a", "n/a"]
            elif metric == "RSS":
                cells += [f"{_num(t.start)} / {_num(t.warm)} / {_num(t.end)}", _slope(t.slope_per_h, "MiB")]
            else:
                cells += [f"{_num(t.start)} / {_num(t.end)}", _slope(t.slope_per_h, s.unit if s else "")]
        c = verdict.get(name)
        cells.append("n/a" if c is None else ("pass" if c.ok else "n/a" if c.ok is None else "**FAIL**")
                     + (f": {c.reason}" if c else ""))
        lines.append("| " + " | ".join(cells) + " |")
    bad = [c for c in rss if c.ok is False]
    return lines + ["", f"{len(rss) - len(bad)} of {len(rss)} processes within the RSS bar "
                        f"({RSS_BAR:.0%} after warm-up).", ""]


def _other_table(title: str, series: Sequence[Series], warm: float, bounded: Sequence[Check]) -> list[str]:
    if not series:
        return [f"## {title}", "", "No samples.", ""]
    verdict = {c.label: c for c in bounded}
    lines = [f"## {title}", "", "| series | start | after warm-up | end | slope after warm-up | check |",
             "|---|---|---|---|---|---|"]
    for s in series:
        t = trend(s, warm)
        c = verdict.get(s.label)
        check = "-" if c is None else ("ok" if c.ok else "n/a" if c.ok is None else "**GROWS**") + f": {c.reason}"
        lines.append(f"| {s.label} | {_num(t.start, s.unit)} | {_num(t.warm, s.unit)} | {_num(t.end, s.unit)} "
                     f"| {_slope(t.slope_per_h, s.unit)} | {check} |")
    return lines + [""]


def relative_to_warm(series: Series, warm_up_s: float) -> Series:
    """The series' points after warm-up as % change from the first of them."""
    after = [(x, y) for x, y in series.points if x >= warm_up_s]
    base = after[0][1] if after else 0.0
    pts = [(x, 100.0 * (y - base) / base) for x, y in after] if base else []
    return Series(series.group, series.name, series.metric, "%", pts)


# -- plots ---------------------------------------------------------------------------------------
def _finish(fig: "plt.Figure", path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


STYLES = ("-", "--", ":", "-.")


def _panel(ax: "plt.Axes", series: Sequence[Series], ylabel: str, warm: float, title: str) -> None:
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, s in enumerate(series):
        if s.points:
            xs, ys = zip(*s.points)
            ax.plot([x / 60 for x in xs], ys, marker=".", label=s.name, color=colours[i % len(colours)],
                    linestyle=STYLES[(i // len(colours)) % len(STYLES)])
    ax.axvline(warm / 60, color="grey", linestyle="--", linewidth=1)
    ax.set_xlabel("minutes since the jobs started (dashed: end of warm-up)")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=6, ncol=2)


def plot_all(samples: Sequence[dict[str, Any]], out: Path, warm_up_s: float) -> list[Path]:
    """The soak's plots in ``out``: processes (RSS, fds, threads), switches and controller, log
    sizes, rounds per minute. Returns the files written."""
    series = build_series(samples)

    def pick(group: str, metric: str | None = None) -> list[Series]:
        return [s for s in series if s.group == group and (metric is None or s.metric == metric)]

    written = []
    fig, axes = plt.subplots(4, 1, figsize=(8, 14))
    for ax, (metric, unit) in zip(axes, (("RSS", "MiB"), ("open fds", "fds"), ("threads", "threads"))):
        _panel(ax, pick("process", metric), unit, warm_up_s, f"{metric} per process")
    _panel(axes[3], [relative_to_warm(s, warm_up_s) for s in pick("process", "RSS")], "% change",
           warm_up_s, "RSS per process against its first value after warm-up (bar: +5%)")
    axes[3].axhline(100 * RSS_BAR, color="red", linestyle="--", linewidth=1)
    written.append(_finish(fig, out / "processes.png"))
    fig, axes = plt.subplots(2, 2, figsize=(10, 7))
    _panel(axes[0][0], pick("switch"), "entries", warm_up_s, "table entries per switch")
    for ax, (_, metric, unit) in zip((axes[0][1], axes[1][0], axes[1][1]), CONTROLLER_METRICS):
        _panel(ax, pick("controller", metric), unit, warm_up_s, f"controller: {metric}")
    written.append(_finish(fig, out / "switches_controller.png"))
    fig, axes = plt.subplots(2, 1, figsize=(8, 7))
    logs = pick("logs")
    top = sorted([s for s in logs if s.name != "all logs"], key=lambda s: -s.points[-1][1])[:8]
    _panel(axes[0], [s for s in logs if s.name == "all logs"], "MiB", warm_up_s, "all log files")
    _panel(axes[1], top, "MiB", warm_up_s, "largest log files")
    written.append(_finish(fig, out / "logs.png"))
    fig, ax = plt.subplots(figsize=(8, 4))
    _panel(ax, pick("job", "rounds per minute"), "rounds per minute", warm_up_s,
           "rounds per minute per job (grey: the machine's 1-min load average)")
    load = pick("machine")
    if load and load[0].points:
        twin = ax.twinx()
        xs, ys = zip(*load[0].points)
        twin.plot([x / 60 for x in xs], ys, color="grey", alpha=0.6, linewidth=1)
        twin.set_ylabel("load average (1 min)")
    written.append(_finish(fig, out / "rounds.png"))
    return written


def write_report(samples: Sequence[dict[str, Any]], meta: dict[str, Any], out: Path) -> list[str]:
    """``meta.json``, the plots and ``summary.md`` in ``out``; returns the failures (empty: passed)."""
    meta = dict(meta)
    meta["plots"] = [p.name for p in plot_all(samples, out, float(meta["warm_up_s"]))]
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    (out / "summary.md").write_text(render_markdown(samples, meta))
    return failures(build_series(samples), float(meta["warm_up_s"]), meta.get("ended_early", []))


def main(argv: list[str] | None = None) -> int:
    """`python -m topo.soak_report OUT`: summary and plots again from OUT's samples.jsonl and
    meta.json (after a change to this module); exit 1 when the soak failed."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m topo.soak_report OUT (a folder a soak wrote)", file=sys.stderr)
        return 2
    out = Path(args[0])
    try:
        samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines() if line.strip()]
        meta = json.loads((out / "meta.json").read_text())
    except (OSError, ValueError) as exc:
        print(f"topo.soak_report: error: {exc}", file=sys.stderr)
        return 2
    if not samples:
        print(f"topo.soak_report: error: {out / 'samples.jsonl'} holds no sample", file=sys.stderr)
        return 2
    fails = write_report(samples, meta, out)
    print("soak: PASS" if not fails else "soak: FAIL: " + "; ".join(fails))
    return 0 if not fails else 1


if __name__ == "__main__":
    sys.exit(main())
