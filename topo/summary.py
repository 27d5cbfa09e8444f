"""The demo's summary: transport, rounds, per-layer delivered fraction vs bound, bound
violations, accuracy, switch statistics.

Reads the agents' JSON-lines records and `gradctl stats --json` as they are; fields an agent
does not report are shown as "n/a" rather than guessed.
"""
from __future__ import annotations

import json
from typing import Any, Iterable

from topo.ddp_summary import is_ddp, render_ddp
from topo.fault_report import fault_lines, fault_rows
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


def round_records(result: TrainingResult) -> list[dict[str, Any]]:
    """The parameter server's per-round records, in order."""
    return _round_records(result)


def rounds_completed(result: TrainingResult) -> int:
    """Rounds the parameter server closed (distinct round numbers it reported)."""
    return len({r["round"] for r in _round_records(result)})


def _deadline_closed(rec: dict[str, Any]) -> bool:
    return "deadline" in (rec.get("closed_by") or [])


def _closed_without_bound(rec: dict[str, Any]) -> bool:
    """Some push of the round closed by its deadline, or went without a worker (absent or
    joining again): its lowest delivered fraction says nothing about the bound."""
    return bool({"deadline", "absent", "rejoined"} & set(rec.get("closed_by") or []))


def deadline_rounds(result: TrainingResult) -> int:
    """Rounds the PS closed (partly) by its deadline rather than by reaching the bound."""
    return sum(1 for r in _round_records(result) if _deadline_closed(r))


def per_layer(result: TrainingResult) -> dict[int, dict[str, float]]:
    """layer -> {min, min_all, mean delivered push fraction, bound, violations} over the PS's
    round records. `min` is over rounds closed by the bound; `min_all` over every round, deadline
    closes and rounds without an absent worker included; `violations` counts push transfers closed with more loss than the bound."""
    mins: dict[int, list[float]] = {}
    mins_all: dict[int, list[float]] = {}
    means: dict[int, list[float]] = {}
    bounds: dict[int, float] = {}
    violations: dict[int, float] = {}
    for rec in _round_records(result):
        mean = _layer_map(rec.get("delivered"))
        for layer, frac in mean.items():
            means.setdefault(layer, []).append(frac)
        lowest = _layer_map(rec.get("delivered_min")) or mean
        for layer, frac in lowest.items():
            mins_all.setdefault(layer, []).append(frac)
            if not _closed_without_bound(rec):
                mins.setdefault(layer, []).append(frac)
        for key in ("bounds", "bound"):
            bounds.update(_layer_map(rec.get(key)))
        for layer, count in _layer_map(rec.get("violations")).items():
            violations[layer] = violations.get(layer, 0) + count
    return {layer: {"min": min(mins.get(layer) or [float("nan")]),
                    "min_all": min(mins_all.get(layer) or [float("nan")]),
                    "mean": sum(v) / len(v), "bound": bounds.get(layer, float("nan")),
                    "violations": violations.get(layer, float("nan"))}
            for layer, v in sorted(means.items())}


def bound_scope(result: TrainingResult) -> str:
    """'tensor' (one bound over the tensor: LTP, MLT, DBLP) or 'layer' (PLOT), as the PS ran."""
    starts = _records(result, "ps", "start")
    return (starts[0].get("config") or {}).get("bound_scope", "layer") if starts else "layer"


def tensor_delivery(result: TrainingResult) -> dict[str, float] | None:
    """{min, bound}: the worst worker's delivered fraction of the whole tensor over rounds
    closed by the bound, and the pooled bound (the layers' bounds weighted by their sizes, the
    loosest of the run); None when the PS reported no tensor figures."""
    starts = _records(result, "ps", "start")
    sizes = starts[0].get("layer_sizes") if starts else None
    lows, bounds = [], []
    for rec in _round_records(result):
        if rec.get("delivered_tensor_min") is None or not sizes:
            continue
        layer_bounds = rec.get("bounds") or []
        if len(layer_bounds) == len(sizes):
            bounds.append(sum(b * n for b, n in zip(layer_bounds, sizes)) / sum(sizes))
        if not _deadline_closed(rec):
            lows.append(rec["delivered_tensor_min"])
    if not lows:
        return None
    return {"min": min(lows), "bound": max(bounds) if bounds else float("nan")}


def _records(result: TrainingResult, role: str, event: str) -> list[dict[str, Any]]:
    return [r for name, recs in result.records.items() if name.startswith(role)
            for r in recs if r.get("event") == event]


def violations(result: TrainingResult) -> dict[str, dict[int, int]] | None:
    """{'push': layer -> count (the PS), 'pull': layer -> count (all workers)}: transfers closed
    with more loss than their bound. None when the agents did not report violations."""
    push_recs = [r for r in _round_records(result) if "violations" in r]
    pull_recs = [r for r in _records(result, "worker", "round") if "pull_violations" in r]
    if not push_recs and not pull_recs:
        return None
    out: dict[str, dict[int, int]] = {"push": {}, "pull": {}}
    for stage, recs, key in (("push", push_recs, "violations"), ("pull", pull_recs, "pull_violations")):
        for rec in recs:
            for layer, count in _layer_map(rec.get(key)).items():
                out[stage][layer] = out[stage].get(layer, 0) + int(count)
    return out


def violation_line(result: TrainingResult) -> str:
    """'bound violations: N (push ..., pull ...)', 0 when nothing went wrong."""
    found = violations(result)
    if found is None:
        return "bound violations: n/a (agents reported none)"
    total = sum(sum(v.values()) for v in found.values())
    parts = []
    for stage in ("push", "pull"):
        hit = {layer: n for layer, n in sorted(found[stage].items()) if n}
        parts.append(f"{stage} " + (", ".join(f"layer {l} x{n}" for l, n in hit.items()) if hit else "0"))
    return f"bound violations: {total} ({'; '.join(parts)})" + ("  VIOLATED" if total else "")


def policy_line(result: TrainingResult) -> str:
    """Where the job's loss bounds came from: the controller's policy (each generation and the
    round it applied from) or the agents' flags."""
    changes = _records(result, "ps", "policy")
    if not changes:
        return "loss bounds: from the agents' flags (no controller policy)"
    parts = [f"epoch {c.get('epoch')} from round {c.get('round')} "
             f"(push {', '.join(f'{b:.4g}' for b in c.get('push_bounds') or [])}"
             f"{', regime ' + str(c.get('regime')) if c.get('regime') else ''})" for c in changes[-4:]]
    more = f"{len(changes) - 4} earlier, " if len(changes) > 4 else ""
    return f"loss bounds: from the controller's policy: {more}{'; '.join(parts)}"


def transport_line(result: TrainingResult) -> str:
    """What transport the job used, as the parameter server recorded it (pacing included)."""
    starts = _records(result, "ps", "start")
    cfg = starts[0].get("config") if starts else None
    if not isinstance(cfg, dict):
        kind = starts[0].get("transport") if starts else None
        return f"transport: {kind or 'n/a'}"
    # Pacing is a worker setting (the workers share the bottleneck): read it from their records.
    paces = {w["config"].get("pace_pps") or 0 for w in _records(result, "worker", "start")
             if isinstance(w.get("config"), dict)} or {cfg.get("pace_pps") or 0}
    pace = max(paces)
    parts = [f"transport: {cfg.get('transport', 'n/a')}",
             f"workers paced at {pace:g} pps each" if pace else "pacing off"]
    if cfg.get("transport") == "tcp":
        parts.append(f"congestion control {cfg.get('tcp_cc')}, ECN {cfg.get('tcp_ecn')}")
        done = _records(result, "ps", "done")
        conns = done[-1].get("connections") if done else None
        if isinstance(conns, dict) and conns:
            used = sorted({f"{c.get('cc')}/ECN {'on' if c.get('ecn') else 'off'}"
                           for c in conns.values() if isinstance(c, dict)})
            parts.append("connections " + ", ".join(used))
    else:
        if cfg.get("plain"):
            parts.append("PLAIN (no network assistance)")
        if isinstance(cfg.get("window"), int):
            parts.append(f"initial window {cfg['window']} packets, --cc {cfg.get('cc')}" if cfg["window"] > 0
                         else "no window (every chunk at once)")
        parts.append(f"hole fill {cfg.get('hole_fill')}")
        parts.append(f"push deadline {cfg.get('push_deadline')}")
        parts.append(f"pull deadline {cfg.get('pull_deadline')}")
        if cfg.get("phase_aware"):
            parts.append(f"phase-aware (check every {cfg.get('phase_check_rounds')} rounds"
                         + (", per layer)" if cfg.get("phase_per_layer") else ")"))
    parts += [f"{key} {cfg[key]}" for key in ("chunking", "pull") if cfg.get(key)]
    return "; ".join(parts)


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


def _frac(value: float) -> str:
    return "n/a" if value != value else f"{value:.3f}"


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


def stats_lines(stats: Any | None, limit: int = 40) -> list[str]:
    """The switches' counters (gradctl stats) for a summary."""
    if stats is None:
        return ["switch statistics: n/a (gradctl stats unavailable)"]
    if (rows := switch_lines(stats)) is not None:
        return ["switch statistics (gradctl stats):", *(rows or ["  no gradient traffic counted"])]
    items = list(stat_lines(stats))
    lines = [f"switch statistics ({len(items)} counters, gradctl stats --json):"]
    lines += ["  " + item for item in items[:limit]]
    if len(items) > limit:
        lines.append(f"  ... {len(items) - limit} more (gradctl stats)")
    return lines


def render(result: TrainingResult, stats: Any | None, limit: int = 40,
           switch_logs: dict[str, str] | None = None,
           faults: list[dict[str, Any]] | None = None) -> str:
    """The summary text; `switch_logs` (switch name -> log path) adds the switch processes'
    own receive drops, `faults` (the supervisor's, and killed workers) what each cost."""
    if is_ddp(result):
        return "\n".join([render_ddp(result), *stats_lines(stats, limit)])
    lines = [f"training: {'finished' if result.ok else 'FAILED'} in {result.elapsed_s:.1f} s, "
             f"{rounds_completed(result)} round(s)"]
    lines += result.failure_lines()
    lines.append(transport_line(result))
    lines.append(policy_line(result))
    layers = per_layer(result)
    if layers:
        late = deadline_rounds(result)
        lines.append("per-layer delivered push fraction (min over bound-closed rounds / min over all "
                     "rounds / mean) vs loss bound"
                     + (f"; {late} round(s) closed by the deadline" if late else "") + ":")
        per_layer_bounds = bound_scope(result) == "layer"
        for layer, row in layers.items():
            bound = "n/a" if row["bound"] != row["bound"] else f"{row['bound']:.3f}"
            ok = "" if bound == "n/a" or row["min"] != row["min"] or not per_layer_bounds else \
                ("  ok" if row["min"] >= 1 - row["bound"] - 1e-9 else "  BELOW 1-bound")
            vio = "" if row["violations"] != row["violations"] else f", {row['violations']:g} violation(s)"
            lines.append(f"  layer {layer}: {_frac(row['min'])} / {_frac(row['min_all'])} / {row['mean']:.3f}"
                         f"   bound {bound}{ok}{vio}")
        tensor = tensor_delivery(result)
        if tensor is not None and not per_layer_bounds:
            ok = "ok" if tensor["min"] >= 1 - tensor["bound"] - 1e-6 else "BELOW 1-bound"
            lines.append(f"  whole tensor (one bound over all layers): min over bound-closed rounds "
                         f"{tensor['min']:.3f} vs bound {tensor['bound']:.3f}: {ok}")
    else:
        lines.append("per-layer delivered fraction: n/a (agents reported none)")
    lines.append(violation_line(result))
    acc = final_accuracy(result)
    lines.append(f"accuracy: {acc:.4f}" if acc is not None else "accuracy: n/a")
    lines += stats_lines(stats, limit)
    lines += switch_process_lines(switch_logs or {})
    lines += fault_lines(fault_rows(faults or [], result))
    return "\n".join(lines)
