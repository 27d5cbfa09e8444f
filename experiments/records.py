"""The results directory of one experiment run and its records.

results/NAME/<timestamp>/
  config.yaml    the effective config (quick overrides applied)
  rounds.jsonl   one record per training round (ROUND_FIELDS at least)
  runs.jsonl     one record per arm x repetition (RUN_FIELDS at least)
  state.json     running / interrupted / failed / done, and what is left
  summary.md, *.png   written at the end
A run's rounds and its run record are written together once it finished, so an interrupted
repetition leaves nothing behind and `--resume` repeats it.
"""
from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from experiments.errors import ResumeError
from p4target.atomic_files import write_text

# Every round record has these keys (value None where a transport does not report it).
ROUND_FIELDS = ("arm", "rep", "round", "t_s", "round_time_s", "delivered", "violations",
                "queue_depth", "accuracy")
# Every run record has these keys.
RUN_FIELDS = ("arm", "rep", "ok", "error", "elapsed_s", "metrics", "switch", "conditions")


def _clean(value: Any) -> Any:
    """JSON-safe: nan/inf become None, tuples lists."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


@dataclass
class Results:
    """Everything a results directory holds, for summaries and plots."""

    runs: list[dict[str, Any]] = field(default_factory=list)
    rounds: list[dict[str, Any]] = field(default_factory=list)

    def arms(self) -> list[str]:
        """Arm names in the order they first ran."""
        seen: dict[str, None] = {}
        for run in self.runs:
            seen.setdefault(run["arm"], None)
        return list(seen)

    def runs_of(self, arm: str, ok_only: bool = True) -> list[dict[str, Any]]:
        """The run records of `arm` (only those that finished, unless ok_only=False)."""
        return [r for r in self.runs if r["arm"] == arm and (r.get("ok") or not ok_only)]

    def rounds_of(self, arm: str, rep: int | None = None) -> list[dict[str, Any]]:
        """Round records of `arm` (one repetition, or all), in order."""
        return [r for r in self.rounds if r["arm"] == arm and (rep is None or r["rep"] == rep)]

    def metric(self, arm: str, key: str) -> list[float]:
        """metrics[key] of every finished run of `arm` that has it."""
        out = []
        for run in self.runs_of(arm):
            value = run.get("metrics", {}).get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                out.append(float(value))
        return out

    def switch_dropped(self, arm: str | None = None) -> bool:
        """True if a switch process itself dropped packets in any run (of `arm`)."""
        return any(r.get("conditions", {}).get("switch_dropped") for r in self.runs
                   if arm is None or r["arm"] == arm)


class ResultsDir:
    """One experiment run's directory (see the module docstring)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    config_path = property(lambda self: self.path / "config.yaml")
    rounds_path = property(lambda self: self.path / "rounds.jsonl")
    runs_path = property(lambda self: self.path / "runs.jsonl")
    state_path = property(lambda self: self.path / "state.json")
    summary_path = property(lambda self: self.path / "summary.md")

    @classmethod
    def create(cls, base: str | Path, name: str) -> "ResultsDir":
        """A new results/NAME/<UTC timestamp>/ (suffixed if it exists)."""
        stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
        root = Path(base) / name
        path = root / stamp
        k = 1
        while path.exists():
            k += 1
            path = root / f"{stamp}-{k}"
        path.mkdir(parents=True)
        return cls(path)

    @classmethod
    def existing(cls, path: str | Path) -> "ResultsDir":
        """An earlier run's directory, for --resume; ResumeError if it is not one."""
        rd = cls(path)
        if not rd.config_path.is_file():
            raise ResumeError(f"{path} is not an experiment results directory (no config.yaml)")
        return rd

    def append_run(self, run: dict[str, Any], rounds: Iterable[dict[str, Any]]) -> None:
        """Write one finished run: its rounds, then its run record."""
        rounds = list(rounds)
        missing = [k for k in RUN_FIELDS if k not in run]
        if missing:
            raise ValueError(f"run record lacks {', '.join(missing)}")
        with self.rounds_path.open("a") as f:
            for rec in rounds:
                full = {k: rec.get(k) for k in ROUND_FIELDS}
                full.update(rec)
                f.write(json.dumps(_clean(full), separators=(",", ":")) + "\n")
        with self.runs_path.open("a") as f:
            f.write(json.dumps(_clean(run), separators=(",", ":")) + "\n")

    def load(self) -> Results:
        """The runs and rounds written so far; rounds of runs without a run record (a crash
        between the two writes) are left out."""
        runs = _read_jsonl(self.runs_path)
        done = {(r["arm"], r["rep"]) for r in runs}
        rounds = [r for r in _read_jsonl(self.rounds_path) if (r.get("arm"), r.get("rep")) in done]
        return Results(runs=runs, rounds=rounds)

    def completed(self) -> set[tuple[str, int]]:
        """(arm, rep) of every run already recorded."""
        return {(r["arm"], r["rep"]) for r in _read_jsonl(self.runs_path)}

    def set_state(self, status: str, **extra: Any) -> None:
        """Record the run's status (running, interrupted, failed, done)."""
        data = {"status": status, "updated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **extra}
        write_text(self.state_path, json.dumps(_clean(data), indent=1) + "\n")

    def state(self) -> dict[str, Any]:
        try:
            return json.loads(self.state_path.read_text())
        except (OSError, ValueError):
            return {}


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    out = []
    try:
        text = path.read_text()
    except OSError:
        return out
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            item = json.loads(line)
        except ValueError:
            continue        # a line cut by a crash
        if isinstance(item, dict) and "arm" in item:
            out.append(item)
    return out
