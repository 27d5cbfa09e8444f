"""Summary statistics of repeated measurements: mean, spread, percentiles, formatting."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable


@dataclass(frozen=True)
class Stat:
    """Mean and sample standard deviation of `n` finite values (nan when there are none)."""

    mean: float
    sd: float
    n: int
    lo: float
    hi: float

    def fmt(self, digits: int = 3, unit: str = "") -> str:
        """'1.23 ± 0.04 (n=3)'; 'n/a' when empty."""
        if self.n == 0:
            return "n/a"
        u = f" {unit}" if unit else ""
        if self.n == 1:
            return f"{_num(self.mean, digits)}{u} (n=1)"
        return f"{_num(self.mean, digits)} ± {_num(self.sd, digits)}{u} (n={self.n})"


def summarize(values: Iterable[float | None]) -> Stat:
    """Stat of the finite values (None and nan are skipped)."""
    vals = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    if not vals:
        return Stat(math.nan, math.nan, 0, math.nan, math.nan)
    mean = sum(vals) / len(vals)
    sd = math.sqrt(sum((v - mean) ** 2 for v in vals) / (len(vals) - 1)) if len(vals) > 1 else 0.0
    return Stat(mean, sd, len(vals), min(vals), max(vals))


def percentile(values: Iterable[float | None], q: float) -> float:
    """The q-th percentile (0..100), linear interpolation between order statistics; nan if empty."""
    vals = sorted(float(v) for v in values if v is not None and math.isfinite(float(v)))
    if not vals:
        return math.nan
    if len(vals) == 1:
        return vals[0]
    pos = (len(vals) - 1) * min(max(q, 0.0), 100.0) / 100.0
    low = math.floor(pos)
    high = min(low + 1, len(vals) - 1)
    return vals[low] + (vals[high] - vals[low]) * (pos - low)


def mean(values: Iterable[float | None]) -> float:
    """Mean of the finite values; nan if none."""
    return summarize(values).mean


def ratio(a: float, b: float) -> float:
    """a / b, nan when either is not finite or b is 0."""
    if not (math.isfinite(a) and math.isfinite(b)) or b == 0:
        return math.nan
    return a / b


def _num(x: float, digits: int) -> str:
    if not math.isfinite(x):
        return "n/a"
    if abs(x) >= 10 ** digits and abs(x) < 10 ** 9:
        return f"{x:.0f}"
    if x != 0 and (abs(x) >= 10 ** 9 or abs(x) < 10 ** -(digits - 1)):
        return f"{x:.{digits - 1}e}"
    return f"{x:.{digits}g}" if abs(x) >= 1 else f"{x:.{digits}f}".rstrip("0").rstrip(".") or "0"


def fmt_num(x: float | None, digits: int = 3) -> str:
    """A number for a table cell; 'n/a' for None/nan."""
    return "n/a" if x is None or not math.isfinite(x) else _num(x, digits)
