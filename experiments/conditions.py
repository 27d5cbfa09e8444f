"""Run conditions: machine load, the switch processes' own receive drops and CPU use, and the
switches' P4 counters, sampled before and after each run so a run records its own share.

Switch receive drops and queue tail drops come from `<switch log>.stats.json` (the embedded
switch writes it at start and rewrites it every second; simple_switch writes none, then they are
unknown); a snapshot waits for a copy written after it began, so a run counts its own last second
and not the one before it. A run in which a switch process
itself dropped packets is flagged: its figures measure the switch's CPU, not the queue under study.
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from typing import Any

_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass
class Snapshot:
    """Counters at one moment."""

    t: float
    load1: float
    rx_drops: dict[str, int | None] = field(default_factory=dict)
    tail_drops: dict[str, int | None] = field(default_factory=dict)
    cpu_ticks: dict[str, int | None] = field(default_factory=dict)
    counters: dict[str, float] = field(default_factory=dict)


def switch_file_counter(log: str, key: str = "rx_drops_total") -> int | None:
    """A counter of a switch's `<log>.stats.json` (rx_drops_total: the process's own receive
    drops; queue_tail_drops: P4 queue overflows); None when there is none."""
    try:
        with open(f"{log}.stats.json") as f:
            return int(json.load(f)[key])
    except (OSError, ValueError, KeyError, TypeError):
        return None


# The embedded switch rewrites its stats file every second (p4target/switch/stats_file.py).
_STATS_FRESH_WAIT_S = 1.5


def wait_fresh_stats(logs: list[str], since: float, timeout: float = _STATS_FRESH_WAIT_S) -> None:
    """Wait until every `<log>.stats.json` that exists was written at or after `since` (epoch s),
    at most `timeout` s: an older copy misses the last second's drops, or, just after a switch
    started, holds the previous run's figures."""
    deadline = time.monotonic() + timeout
    pending = list(logs)
    while pending and time.monotonic() < deadline:
        stale = []
        for log in pending:
            try:
                if os.stat(f"{log}.stats.json").st_mtime < since:
                    stale.append(log)
            except OSError:
                pass
        pending = stale
        if pending:
            time.sleep(0.05)


def process_cpu_ticks(pid: int | None) -> int | None:
    """utime + stime of a process (clock ticks), None if it is gone."""
    if not pid:
        return None
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except OSError:
        return None
    parts = text[text.rfind(")") + 2:].split()
    try:
        return int(parts[11]) + int(parts[12])
    except (IndexError, ValueError):
        return None


def flatten_counters(stats: Any, prefix: str = "") -> dict[str, float]:
    """Numeric leaves of `gradctl --json stats` as 'switch.queues[port=11,prio=6].dropped' -> value."""
    out: dict[str, float] = {}
    if isinstance(stats, dict):
        for key, value in stats.items():
            out.update(flatten_counters(value, f"{prefix}.{key}" if prefix else str(key)))
    elif isinstance(stats, list):
        for index, item in enumerate(stats):
            label = str(index)
            if isinstance(item, dict):
                keys = [k for k in ("job", "slot", "port", "prio") if k in item]
                if keys:
                    label = ",".join(f"{k}={item[k]}" for k in keys)
            out.update(flatten_counters(item, f"{prefix}[{label}]"))
    elif isinstance(stats, (int, float)) and not isinstance(stats, bool):
        out[prefix] = float(stats)
    return out


# Counters (not ratios or settings) are the leaves whose names say they count.
_COUNTING = ("seen", "dropped", "marked", "tx")


def snapshot(session: Any, with_counters: bool = True) -> Snapshot:
    """Sample the machine and the session's switches now."""
    snap = Snapshot(t=time.monotonic(), load1=os.getloadavg()[0])
    topo = session.topo
    wait_fresh_stats([sw.log for sw in topo.switches.values()], time.time())
    for name, sw in topo.switches.items():
        snap.rx_drops[name] = switch_file_counter(sw.log, "rx_drops_total")
        snap.tail_drops[name] = switch_file_counter(sw.log, "queue_tail_drops")
        pid = None
        if session.network is not None:
            try:
                pid = session.network.switch(name).pid_of_process
            except Exception:       # a switch that is gone: no CPU figure
                pid = None
        snap.cpu_ticks[name] = process_cpu_ticks(pid)
    if with_counters:
        stats = session.stats()
        if stats is not None:
            snap.counters = {k: v for k, v in flatten_counters(stats).items()
                             if k.rsplit(".", 1)[-1] in _COUNTING}
    return snap


def compare(before: Snapshot, after: Snapshot) -> tuple[dict[str, Any], dict[str, Any]]:
    """(conditions, switch) of the interval: load, switch drops and CPU; counter deltas."""
    wall = max(after.t - before.t, 1e-9)
    drops: dict[str, int | None] = {}
    cpu: dict[str, float | None] = {}
    for name in after.rx_drops:
        a, b = after.rx_drops.get(name), before.rx_drops.get(name)
        drops[name] = None if a is None else a - (b or 0)
        ta, tb = after.cpu_ticks.get(name), before.cpu_ticks.get(name)
        cpu[name] = None if ta is None or tb is None else round(100.0 * (ta - tb) / _TICKS / wall, 1)
    known = [d for d in drops.values() if d is not None]
    conditions = {
        "load1_start": round(before.load1, 2), "load1_end": round(after.load1, 2),
        "cpu_count": os.cpu_count(),
        "switch_rx_drops": drops,
        "switch_rx_drops_total": sum(known) if known else None,
        "switch_cpu_pct": cpu,
        "switch_cpu_pct_max": max((c for c in cpu.values() if c is not None), default=None),
        "switch_dropped": bool(known) and sum(known) > 0,
        "wall_s": round(wall, 3),
    }
    deltas = {k: v - before.counters.get(k, 0.0) for k, v in after.counters.items()}
    tail = {name: (None if a is None else a - (before.tail_drops.get(name) or 0))
            for name, a in after.tail_drops.items()}
    switch = {"queue_tail_drops": tail, "counters": {k: v for k, v in deltas.items() if v}}
    return conditions, switch


def selective_drops(switch: dict[str, Any], name: str | None = None, port: int | None = None) -> float:
    """Selective (policy) drops of the P4 queues in a run's `switch` record (one switch/port or
    all); tail drops are in switch['queue_tail_drops'] per switch."""
    total = 0.0
    for key, value in switch.get("counters", {}).items():
        if ".queues[" not in key or not key.endswith(".dropped"):
            continue
        if name is not None and not key.startswith(f"{name}."):
            continue
        if port is not None and f"port={port}," not in key:
            continue
        total += value
    return total
