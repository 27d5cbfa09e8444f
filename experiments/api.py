"""The types an experiment module exchanges with the harness (see experiments/README.md)."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from experiments.config import Arm, ExperimentConfig
from experiments.stats import Stat


@dataclass(frozen=True)
class Figure:
    """One headline figure of the paper: what the summary table compares."""

    key: str            # stable id, e.g. "p99_round_time_x"
    label: str          # table text, e.g. "p99 round time, best TCP / gradlane"
    paper: str          # the paper's figure as text, e.g. "up to 30x"
    unit: str = ""
    note: str = ""      # one line on scaling / why ours may differ


@dataclass
class Row:
    """One line of the summary table: a figure of ours beside the paper's."""

    key: str                        # the Figure's key
    ours: Stat | str                # a Stat (mean ± sd, n) or preformatted text
    note: str = ""                  # appended to the Figure's note
    flagged: bool = False           # a switch process dropped packets in a run behind this row
    digits: int = 3


@dataclass
class Table:
    """An extra markdown table for summary.md (e.g. per arm)."""

    title: str
    headers: list[str]
    rows: list[list[str]]


@dataclass
class Summary:
    """What `summarize` returns: the headline rows, extra tables and free notes."""

    rows: list[Row] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass
class ArmResult:
    """What `run_arm` returns for one repetition of one arm."""

    rounds: list[dict[str, Any]]            # per-round records (records.ROUND_FIELDS; arm/rep added by the runner)
    metrics: dict[str, Any]                 # per-run summary metrics (numbers, lists, text)
    ok: bool = True
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)    # anything else for runs.jsonl


@dataclass
class ArmContext:
    """What `run_arm` gets: the running session (topo.session.RunSession) already configured for
    the arm's transport, the arm, the repetition, and the harness's helpers."""

    session: Any
    config: ExperimentConfig
    arm: Arm
    rep: int                                # 0-based
    seed: int                               # config.seed + rep: vary per repetition, equal across arms
    out_dir: Path                           # the results directory (for extra files)
    progress: Callable[[str], None]         # progress(text): one progress line tagged with arm/rep

    @property
    def rounds(self) -> int:
        return self.config.rounds_of(self.arm)

    @property
    def workers(self) -> int:
        return self.config.workers_of(self.arm)

    def param(self, key: str, default: Any = None) -> Any:
        """arm.params[key], else config.params[key], else `default`."""
        if key in self.arm.params:
            return self.arm.params[key]
        return self.config.params.get(key, default)


def finite(x: Any) -> bool:
    """True for a finite int/float (not bool)."""
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
