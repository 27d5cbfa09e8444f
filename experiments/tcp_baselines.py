"""gradlane against both TCP baselines, side by side: TCP at the kernel's RTO (Linux's 200 ms
RTO_min, what LTP compares with) and TCP with a tuned RTO_min (an arm with `params.rto_min_ms`
or `params.rto_min_rtts`, the incast literature's fix). A summary shows each ratio beside the
other, where the run has the arms; among several TCP arms of one kind the best mean wins.
"""
from __future__ import annotations

import math
from typing import Callable, Iterable

from experiments.api import Table
from experiments.config import Arm, ExperimentConfig, TopologySettings
from experiments.errors import ConfigError
from experiments.records import Results
from experiments.stats import Stat, fmt_num
from experiments.stats import summarize as stat_of

KERNEL = "kernel"
TUNED = "tuned"
KINDS = (KERNEL, TUNED)
LABELS = {KERNEL: "TCP (kernel RTO)", TUNED: "TCP (tuned RTO)"}
HEADERS = [f"gradlane / {LABELS[KERNEL]}", f"gradlane / {LABELS[TUNED]}"]


def rto_kind(arm: Arm) -> str | None:
    """'tuned' for a TCP arm with a minimum RTO of its own, 'kernel' for any other TCP arm,
    None for an arm that is not TCP."""
    if arm.transport != "tcp":
        return None
    return TUNED if "rto_min_ms" in arm.params or "rto_min_rtts" in arm.params else KERNEL


def _spec(config: ExperimentConfig, arm: str) -> Arm | None:
    try:
        return config.arm(arm)
    except ConfigError:
        return None


def best_by_kind(results: Results, config: ExperimentConfig, arms: Iterable[str],
                 metric: str = "rounds_per_s") -> dict[str, str]:
    """{kind: the TCP arm of that kind with the highest mean `metric`} among `arms` (kinds
    without a finished arm are left out)."""
    best: dict[str, tuple[float, str]] = {}
    for arm in arms:
        spec = _spec(config, arm)
        kind = rto_kind(spec) if spec else None
        if kind is None:
            continue
        value = stat_of(results.metric(arm, metric)).mean
        if math.isfinite(value) and value > best.get(kind, (-math.inf, ""))[0]:
            best[kind] = (value, arm)
    return {kind: arm for kind, (_, arm) in best.items()}


def ratio(results: Results, ours: str, base: str, metric: str = "rounds_per_s") -> Stat:
    """ours / base of `metric`, paired by repetition (the same seed)."""
    x = {r["rep"]: r["metrics"].get(metric) for r in results.runs_of(ours)}
    y = {r["rep"]: r["metrics"].get(metric) for r in results.runs_of(base)}
    return stat_of(x[k] / y[k] for k in sorted(x) if k in y and isinstance(x[k], (int, float))
                   and isinstance(y[k], (int, float)) and y[k])


def ratio_texts(results: Results, config: ExperimentConfig, ours: str, arms: Iterable[str],
                name: Callable[[str], str] = str) -> list[str]:
    """The two cells of HEADERS for `ours` against the TCP arms among `arms`: '1.5 ± 0.1 (n=3)
    vs tcp-cubic' (`name` shortens the arm's name), 'n/a (no such arm)' where the run has none."""
    best = best_by_kind(results, config, arms)
    out = []
    for kind in KINDS:
        base = best.get(kind)
        if base is None:
            out.append("n/a (no such arm)")
        else:
            out.append(f"{ratio(results, ours, base).fmt(3, 'x')} vs {name(base)}")
    return out


def _group(config: ExperimentConfig, spec: Arm) -> tuple[int, TopologySettings]:
    return config.workers_of(spec), config.topology_of(spec)


def table(results: Results, config: ExperimentConfig) -> Table | None:
    """Per gradlane arm (transport ltp): its rounds/s and its ratio to the best TCP arm at the
    kernel's RTO and to the best tuned-RTO TCP arm, each among the arms with the same workers and
    network; None when no gradlane arm has a TCP arm beside it."""
    specs = {a: s for a in results.arms() if (s := _spec(config, a)) is not None}
    rows = []
    for arm, spec in specs.items():
        if spec.transport != "ltp" or not results.runs_of(arm):
            continue
        peers = [a for a, s in specs.items() if rto_kind(s) and _group(config, s) == _group(config, spec)]
        if not peers:
            continue
        best = best_by_kind(results, config, peers)
        rates = [f"{fmt_num(stat_of(results.metric(best[k], 'rounds_per_s')).mean, 3)} ({best[k]})"
                 if k in best else "n/a" for k in KINDS]
        rows.append([arm, stat_of(results.metric(arm, "rounds_per_s")).fmt(3), rates[0], rates[1],
                     *ratio_texts(results, config, arm, peers)])
    if not rows:
        return None
    return Table("gradlane against both TCP baselines (rounds/s; ratios paired by repetition): TCP at "
                 "the kernel's RTO (Linux's 200 ms RTO_min) and TCP with a tuned RTO_min, the best arm "
                 "of each kind with the same workers and network",
                 ["arm", "gradlane rounds/s", f"{LABELS[KERNEL]} rounds/s", f"{LABELS[TUNED]} rounds/s",
                  *HEADERS], rows)
