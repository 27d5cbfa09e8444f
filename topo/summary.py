"""The demo's summary: rounds, per-layer delivered fraction vs bound, accuracy, switch statistics.

Reads the agents' JSON-lines records and `gradctl stats --json` as they are; fields an agent
does not report are shown as "n/a" rather than guessed.
"""
from __future__ import annotations

import json
from typing import Any, Iterable

from topo.training import TrainingResult

STAT_WORDS = ("drop", "qdepth", "queue", "mark", "loss", "packets", "seen")


def _layer_map(value: Any) -> dict[int, float]:
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            try:
                out[int(key)] = float(item)
            except (TypeError, ValueError):
                continue
        return out
    if isinstance(value, list):
        return {i: float(v) for i, v in enumerate(value) if isinstance(v, (int, float))}
    return {}


def _round_records(result: TrainingResult) -> list[dict[str, Any]]:
    """The parameter server's per-round records (they carry the per-layer push figures)."""
    ps = [r for name, recs in result.records.items() if name.startswith("ps") for r in recs]
    return [r for r in ps if r.get("event", "round") == "round" and isinstance(r.get("round"), int)]


def rounds_completed(result: TrainingResult) -> int:
    """Rounds the parameter server closed (distinct round numbers it reported)."""
    return len({r["round"] for r in _round_records(result)})


def _deadline_closed(rec: dict[str, Any]) -> bool:
    return "deadline" in (rec.get("closed_by") or [])


def deadline_rounds(result: TrainingResult) -> int:
    """Rounds the PS closed (partly) by its deadline rather than by reaching the bound."""
    return sum(1 for r in _round_records(result) if _deadline_closed(r))


def per_layer(result: TrainingResult) -> dict[int, dict[str, float]]:
    """layer -> {min, mean delivered push fraction, bound} over the PS's round records; `min`
    only over rounds closed by the bound (a deadline close may deliver less, by design)."""
    mins: dict[int, list[float]] = {}
    means: dict[int, list[float]] = {}
    bounds: dict[int, float] = {}
    for rec in _round_records(result):
        mean = _layer_map(rec.get("delivered"))
        for layer, frac in mean.items():
            means.setdefault(layer, []).append(frac)
        if not _deadline_closed(rec):
            for layer, frac in (_layer_map(rec.get("delivered_min")) or mean).items():
                mins.setdefault(layer, []).append(frac)
        for key in ("bounds", "bound"):
            bounds.update(_layer_map(rec.get(key)))
    return {layer: {"min": min(mins.get(layer) or [float("nan")]), "mean": sum(v) / len(v),
                    "bound": bounds.get(layer, float("nan"))}
            for layer, v in sorted(means.items())}


def final_accuracy(result: TrainingResult) -> float | None:
    """The last test accuracy reported (the PS's `epoch` records; else any agent's)."""
    best: float | None = None
    for name in sorted(result.records, key=lambda n: not n.startswith("ps")):
        for rec in result.records[name]:
            if isinstance(rec.get("accuracy"), (int, float)):
                best = float(rec["accuracy"])
        if best is not None:
            return best
    return best


def stat_lines(stats: Any, prefix: str = "") -> Iterable[str]:
    """`path: value` for numeric leaves of gradctl's stats whose path names drops/queues/marks."""
    if isinstance(stats, dict):
        for key, value in stats.items():
            yield from stat_lines(value, f"{prefix}.{key}" if prefix else str(key))
    elif isinstance(stats, list):
        for index, value in enumerate(stats):
            label = value.get("name") or value.get("switch") if isinstance(value, dict) else None
            yield from stat_lines(value, f"{prefix}[{label or index}]")
    elif isinstance(stats, (int, float)) and not isinstance(stats, bool):
        if any(word in prefix.lower() for word in STAT_WORDS):
            yield f"{prefix}: {stats:g}"


def switch_lines(stats: Any) -> list[str] | None:
    """Per switch: each class (seen, dropped, loss vs bound) and each busy egress queue, from
    `gradctl --json stats`; None when the output has another shape."""
    try:
        out = []
        for name, st in stats.items():
            if not st.get("reachable", True):
                out.append(f"  {name}: unreachable ({st.get('error') or 'no connection'})")
                continue
            for c in st["classes"]:
                if not c["seen"]:
                    continue
                out.append(f"  {name} job {c['job']} layers {c['layers'][0]}-{c['layers'][1]} "
                           f"mag {c['mag_classes'][0]}-{c['mag_classes'][1]}: seen {c['seen']}, "
                           f"dropped {c['dropped']} ({c['loss']:.2%} vs bound {c['bound']:.2%}"
                           f"{'' if c.get('within_bound', True) else ', OVER'}), CE-marked {c['marked']}")
            for q in st["queues"]:
                if q["dropped"] or q["marked"] or q["tx"] > 10:
                    out.append(f"  {name} port {q['port']} queue {q['prio']}: tx {q['tx']}, "
                               f"selectively dropped {q['dropped']}, CE-marked {q['marked']}")
        return out
    except (AttributeError, KeyError, TypeError, ValueError):
        return None


def switch_process_lines(logs: dict[str, str]) -> list[str]:
    """Per switch process: its own receive drops from `<log>.stats.json` (embedded switch;
    simple_switch writes none)."""
    parts = []
    for name, log in logs.items():
        try:
            with open(f"{log}.stats.json") as f:
                st = json.load(f)
            parts.append(f"{name} {int(st['rx_drops_total'])}")
        except (OSError, ValueError, KeyError, TypeError):
            parts.append(f"{name} n/a")
    return [f"switch processes' own receive drops: {', '.join(parts)}"] if parts else []


def render(result: TrainingResult, stats: Any | None, limit: int = 40,
           switch_logs: dict[str, str] | None = None) -> str:
    """The summary text; `switch_logs` (switch name -> log path) adds the switch processes'
    own receive drops."""
    lines = [f"training: {'finished' if result.ok else 'FAILED'} in {result.elapsed_s:.1f} s, "
             f"{rounds_completed(result)} round(s)"]
    for name, code in result.exit_codes.items():
        if code != 0:
            lines.append(f"  {name}: exit code {code} (log {result.logs[name]})")
    if result.timed_out:
        lines.append("  timed out; agents were stopped")
    layers = per_layer(result)
    if layers:
        late = deadline_rounds(result)
        lines.append("per-layer delivered push fraction (min over bound-closed rounds / mean) vs loss bound"
                     + (f"; {late} round(s) closed by the deadline" if late else "") + ":")
        for layer, row in layers.items():
            bound = "n/a" if row["bound"] != row["bound"] else f"{row['bound']:.3f}"
            ok = "" if bound == "n/a" or row["min"] != row["min"] else \
                ("  ok" if row["min"] >= 1 - row["bound"] - 1e-9 else "  BELOW 1-bound")
            lines.append(f"  layer {layer}: {row['min']:.3f} / {row['mean']:.3f}   bound {bound}{ok}")
    else:
        lines.append("per-layer delivered fraction: n/a (agents reported none)")
    acc = final_accuracy(result)
    lines.append(f"accuracy: {acc:.4f}" if acc is not None else "accuracy: n/a")
    if stats is None:
        lines.append("switch statistics: n/a (gradctl stats unavailable)")
    elif (rows := switch_lines(stats)) is not None:
        lines.append("switch statistics (gradctl stats):")
        lines += rows or ["  no gradient traffic counted"]
    else:
        items = list(stat_lines(stats))
        lines.append(f"switch statistics ({len(items)} counters, gradctl stats --json):")
        lines += ["  " + item for item in items[:limit]]
        if len(items) > limit:
            lines.append(f"  ... {len(items) - limit} more (gradctl stats)")
    lines += switch_process_lines(switch_logs or {})
    return "\n".join(lines)
