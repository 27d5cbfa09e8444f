"""What one fuzzer tried and what went wrong, printed as one table row per fuzzer."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field


@dataclass
class Report:
    """Counts of one fuzzer: inputs tried, outcomes, and failures with a first example each."""

    name: str
    tried: int = 0
    outcomes: Counter = field(default_factory=Counter)
    crashes: int = 0
    hangs: int = 0
    tracebacks: int = 0
    breaches: int = 0  # an unauthenticated request answered, or a controller locked out
    examples: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def failures(self) -> int:
        return self.crashes + self.hangs + self.tracebacks + self.breaches

    def fail(self, kind: str, example: str) -> None:
        """Record a failure of ``kind`` (crash, hang, traceback or breach)."""
        counter = kind + ("es" if kind in ("crash", "breach") else "s")
        setattr(self, counter, getattr(self, counter) + 1)
        if len(self.examples) < 5:
            self.examples.append(f"{kind}: {example[:300]}")


def print_reports(reports: list[Report]) -> None:
    """The summary table and the first examples of every failure."""
    print(f"{'FUZZER':<12} {'TRIED':>8} {'CRASHES':>8} {'HANGS':>6} {'TRACEBACKS':>10} {'BREACHES':>8} "
          f"{'SECONDS':>8}  OUTCOMES")
    for r in reports:
        top = ", ".join(f"{k} {v}" for k, v in r.outcomes.most_common(6))
        print(f"{r.name:<12} {r.tried:>8} {r.crashes:>8} {r.hangs:>6} {r.tracebacks:>10} {r.breaches:>8} "
              f"{r.seconds:>8.1f}  {top}")
    for r in reports:
        for ex in r.examples:
            print(f"  {r.name}: {ex}")
