"""The previous release's benchmark figures (`benchmarks/baseline.json`), printed beside today's.

The file holds `{"commit": ..., "taken": ..., "load": ..., "figures": {name: value}}`;
`--record-baseline` of a benchmark merges its figures into it.
"""
from __future__ import annotations

import json
import math
import os
import subprocess
import time

PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "baseline.json")


def load() -> dict:
    """The recorded baseline, or an empty one when the file is missing or unreadable."""
    try:
        with open(PATH) as f:
            data = json.load(f)
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def beside(name: str, value: float, unit: str, fmt: str = "{:.1f}") -> str:
    """`value unit (previous release: V unit)` or `(no previous figure)`."""
    base = load()
    old = base.get("figures", {}).get(name)
    now = "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) else fmt.format(value)
    if old is None:
        return f"{now} {unit} (no previous figure)"
    return f"{now} {unit} (previous release {fmt.format(old)} {unit}, commit {base.get('commit', '?')})"


def record(figures: dict[str, float]) -> None:
    """Merge `figures` into baseline.json with the current commit and machine load."""
    data = load()
    root = os.path.dirname(os.path.dirname(PATH))
    try:
        commit = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    data["commit"] = commit
    data["taken"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    data.setdefault("load", {})[",".join(sorted(figures))] = f"loadavg {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    data.setdefault("figures", {}).update({k: round(v, 3) for k, v in figures.items()
                                           if v is not None and not math.isnan(v)})
    with open(PATH, "w") as f:
        json.dump(data, f, indent=2, sort_keys=True)
        f.write("\n")
