"""Where a round's time goes, per arm: the workers' compute, push, pull, control and waiting,
beside the round time and the wire floor (one round's push packets / the bottleneck's rate).

The workers report the parts (round records' `worker_breakdown`, means over workers); the
round time is the interval between round ends at the parameter server. What the parts do not
cover is shown as `other`: with agents that split only push and pull, it holds compute,
control and waiting together. Every summary gets this table and a stacked bar plot
(`report.finish`), for every arm of every experiment.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from experiments import plots
from experiments.records import Results

PARTS = ("compute_s", "push_s", "pull_s", "control_s", "wait_s")
LABELS = {"compute_s": "compute", "push_s": "push", "pull_s": "pull", "control_s": "control",
          "wait_s": "waiting", "other_s": "other (not split)"}


@dataclass(frozen=True)
class Breakdown:
    """Mean seconds per round of one arm (None: no round reported the part)."""

    arm: str
    rounds: int
    round_time_s: float | None
    parts: dict[str, float | None]
    other_s: float | None           # round time minus the reported parts (>= 0)
    floor_s: float | None           # push packets per round / bottleneck packets per second


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def of_rounds(arm: str, rounds: list[dict[str, Any]], floor_s: float | None) -> Breakdown:
    """The mean breakdown of these round records. The first round of each repetition is left
    out: its round time is the PS's gather + scatter only, not an interval between round ends."""
    used = [r for r in rounds if _finite(r.get("round_time_s")) and r.get("round") not in (0, None)]
    parts: dict[str, float | None] = {}
    for part in PARTS:
        values = [float(r["worker_breakdown"][part]) for r in used
                  if isinstance(r.get("worker_breakdown"), dict) and _finite(r["worker_breakdown"].get(part))]
        parts[part] = _mean(values)
    round_time = _mean([float(r["round_time_s"]) for r in used])
    known = sum(v for v in parts.values() if v is not None)
    other = max(round_time - known, 0.0) if round_time is not None else None
    return Breakdown(arm, len(used), round_time, parts, other, floor_s)


def wire_floor_s(push_packets: float | None, bottleneck_pps: float | None) -> float | None:
    """Seconds one round's push needs at the bottleneck's rate; None when either is unknown."""
    if not _finite(push_packets) or not _finite(bottleneck_pps) or not bottleneck_pps:
        return None
    return float(push_packets) / float(bottleneck_pps)


def per_arm(results: Results, bottleneck_pps: dict[str, float | None]) -> list[Breakdown]:
    """One Breakdown per arm with finished runs (`bottleneck_pps`: arm -> its bottleneck's rate)."""
    out = []
    for arm in results.arms():
        ok = {r["rep"] for r in results.runs_of(arm)}
        if not ok:
            continue
        rounds = [r for r in results.rounds_of(arm) if r["rep"] in ok]
        packets = _mean(results.metric(arm, "push_packets_per_round"))
        out.append(of_rounds(arm, rounds, wire_floor_s(packets, bottleneck_pps.get(arm))))
    return out


def table_rows(breakdowns: list[Breakdown]) -> list[list[str]]:
    """| arm | rounds | round time | compute | push | pull | control | waiting | other | floor |
    in milliseconds ('n/a' where not reported), and round time / floor."""
    def ms(x: float | None) -> str:
        return f"{x * 1000:.1f}" if x is not None else "n/a"

    rows = []
    for b in breakdowns:
        over = (f"{b.round_time_s / b.floor_s:.2f}x" if b.round_time_s is not None and b.floor_s else "n/a")
        rows.append([b.arm, str(b.rounds), ms(b.round_time_s), *(ms(b.parts[p]) for p in PARTS),
                     ms(b.other_s), ms(b.floor_s), over])
    return rows


TABLE_HEADERS = ["arm", "rounds", "round time ms", *(f"{LABELS[p]} ms" for p in PARTS),
                 "other ms", "wire floor ms", "round / floor"]


def plot(breakdowns: list[Breakdown], path: Path) -> Path:
    """Stacked bars per arm (parts + other, mean ms per round) with the wire floor as a mark."""
    stacks = {b.arm: {LABELS[p]: (b.parts[p] or 0.0) * 1000 for p in PARTS} | {LABELS["other_s"]:
                                                                               (b.other_s or 0.0) * 1000}
              for b in breakdowns}
    floors = {b.arm: b.floor_s * 1000 if b.floor_s is not None else None for b in breakdowns}
    return plots.stacked_bars(stacks, floors, path, "ms per round",
                              "Per-round breakdown (workers' means) vs the wire floor", "wire floor")
