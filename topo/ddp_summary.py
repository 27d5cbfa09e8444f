"""The summary of a DDP job (topo/ddp_job.py): what the script learned and what gradlane
delivered, from the DDP server's JSON lines and rank 0's result line."""
from __future__ import annotations

from typing import Any

from topo.training import TrainingResult

SERVER_ROLE = "ddp-ps"


def is_ddp(result: TrainingResult) -> bool:
    """True when the job's parameter server was the DDP server."""
    return any(r.get("role") == SERVER_ROLE for r in result.all_records())


def _server(result: TrainingResult) -> list[dict[str, Any]]:
    return [r for r in result.all_records() if r.get("role") == SERVER_ROLE]


def rank_result(result: TrainingResult) -> dict[str, Any] | None:
    """Rank 0's last line (steps, accuracy, what the hook saw), if it printed one."""
    lines = [r for name, recs in result.records.items() if name.startswith("rank0@")
             for r in recs if "accuracy" in r]
    return lines[-1] if lines else None


def render_ddp(result: TrainingResult) -> str:
    """The summary text of a DDP job."""
    server = _server(result)
    rounds = [r for r in server if r.get("event") == "round"]
    start = next((r for r in server if r.get("event") == "start"), {})
    lines = [f"DDP training: {'finished' if result.ok else 'FAILED'} in {result.elapsed_s:.1f} s, "
             f"{len(rounds)} step(s) through gradlane"]
    lines += result.failure_lines("the server and ranks were stopped")
    layout = start.get("layout") or {}
    names = list(layout.get("names") or [])
    bounds = list(start.get("push_bounds") or [])
    config = start.get("config") or {}
    if config:
        lines.append(f"transport: {config.get('transport', '?')}; bounds from flags; "
                     f"{config.get('chunking', '?')}; pull {config.get('pull', '?')}; "
                     f"hole fill {config.get('hole_fill', 'n/a')}")
    if rounds:
        push = sum(float(r.get("push_s") or 0) for r in rounds) / len(rounds)
        pull = sum(float(r.get("pull_s") or 0) for r in rounds) / len(rounds)
        lines.append(f"per step: push {push * 1000:.1f} ms, pull {pull * 1000:.1f} ms (means at the server)")
        per_layer = list(zip(*(r.get("delivered") or [] for r in rounds)))
        lines.append("per-layer delivered push fraction (min / mean over steps) vs bound:")
        for i, fractions in enumerate(per_layer):
            name = names[i] if i < len(names) else f"layer {i}"
            bound = f"{bounds[i]:.3f}" if i < len(bounds) else "n/a"
            lines.append(f"  {name}: {min(fractions):.3f} / {sum(fractions) / len(fractions):.3f}"
                         f"   bound {bound}")
        closed: dict[str, int] = {}
        for r in rounds:
            for why in r.get("closed_by") or []:
                closed[why] = closed.get(why, 0) + 1
        if closed:
            lines.append("steps closed by: " + ", ".join(f"{k} {v}" for k, v in sorted(closed.items())))
    final = rank_result(result)
    if final is not None:
        lines.append(f"accuracy (rank 0, test set): {final['accuracy']}")
    return "\n".join(lines)
