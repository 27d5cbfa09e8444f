"""What each fault of a run cost a training job: the round it hit, its time to recovery, the
rounds it cost and the bound violations in them.

Faults come from the supervisor (switch and controller crashes, `Fault.as_dict()`) and from
whoever killed a worker (`{"name", "kind": "worker", "rank", "crashed_at"}`). The job's side
comes from the parameter server's records:
- a switch or controller fault costs the rounds that ran while it was down (from the crash to
  "programmed" / "serving"): those rounds were slowed, or closed by their deadline;
- a worker fault costs the rounds that went on without the worker (`lost` in the PS's round
  records) from its death until it pushed again; its recovery is the time until the job went
  on without it, and re-admission the time until it joined again.
"""
from __future__ import annotations

from typing import Any

from topo.training import TrainingResult


def _ps_records(result: TrainingResult) -> list[dict[str, Any]]:
    return [r for name, recs in result.records.items() if name.startswith("ps") for r in recs]


def _rounds(result: TrainingResult) -> list[tuple[int, float, float, dict[str, Any]]]:
    """(round, start, end, record) of every PS round record, in order (unix times)."""
    out = []
    for rec in _ps_records(result):
        if rec.get("event") == "round" and isinstance(rec.get("round"), int) and "t" in rec:
            end = float(rec["t"])
            out.append((rec["round"], end - float(rec.get("time_s") or 0.0), end, rec))
    return out


def round_at(result: TrainingResult, when: float) -> int | None:
    """The round the PS was in at unix time ``when`` (the first one that ended after it)."""
    return next((rnd for rnd, _, end, _ in _rounds(result) if end >= when), None)


def _violations(rec: dict[str, Any]) -> int:
    return sum(v for v in rec.get("violations") or [] if isinstance(v, int))


def fault_rows(faults: list[dict[str, Any]], result: TrainingResult) -> list[dict[str, Any]]:
    """One row per fault: name, kind, round, recovery_s, rounds_cost, violations (and for a
    worker readmitted_s); see the module docstring."""
    rounds = _rounds(result)
    members = [r for r in _ps_records(result) if r.get("event") == "member"]
    rows = []
    for fault in faults:
        crashed = float(fault["crashed_at"])
        row: dict[str, Any] = {"name": fault["name"], "kind": fault["kind"],
                               "round": round_at(result, crashed)}
        if fault["kind"] == "worker":
            rank = fault["rank"]
            mine = [m for m in members if m.get("rank") == rank and float(m["t"]) >= crashed]
            gone = next((m for m in mine if m.get("change") == "absent"), None)
            back = next((m for m in mine if m.get("change") == "rejoined"), None)
            row["recovery_s"] = None if gone is None else round(float(gone["t"]) - crashed, 3)
            row["readmitted_s"] = None if back is None else round(float(back["t"]) - crashed, 3)
            hit = [rec for _, _, end, rec in rounds if end >= crashed and rank in (rec.get("lost") or [])]
        else:
            recovery = fault.get("recovered_s")
            row["recovery_s"] = recovery
            until = crashed + (recovery if recovery is not None else float("inf"))
            hit = [rec for _, start, end, rec in rounds if end >= crashed and start <= until]
        row["rounds_cost"] = len(hit)
        row["violations"] = sum(map(_violations, hit))
        rows.append(row)
    return rows


def fault_lines(rows: list[dict[str, Any]]) -> list[str]:
    """The summary's lines of the faults."""
    if not rows:
        return []

    def secs(value: Any) -> str:
        return "not recovered" if value is None else f"{value:.2f} s"

    out = [f"faults survived: {sum(1 for r in rows if r['recovery_s'] is not None)} of {len(rows)}"]
    for r in rows:
        what = {"switch": "crash -> programmed", "controller": "crash -> serving",
                "worker": "death -> job went on without it"}.get(r["kind"], "recovery")
        line = (f"  {r['name']} ({r['kind']}) killed in round {r['round']}: {what} "
                f"{secs(r['recovery_s'])}; {r['rounds_cost']} round(s) cost, "
                f"{r['violations']} violation(s) in them")
        if r["kind"] == "worker":
            line += ("; re-admitted " + (f"{r['readmitted_s']:.2f} s after its death"
                                         if r.get("readmitted_s") is not None else "never"))
        out.append(line)
    return out
