"""The switch's own packet counters in a JSON file next to its log, rewritten every second.

Topology and experiment runs read `<log>.stats.json` to report what the switch process itself
lost: `rx_drops_total` counts frames the kernel dropped because a port's receive socket was full
(`PACKET_STATISTICS` tp_drops) plus frames lost inside the switch outside the P4 queues (none:
the data path has no other queue). P4 queue tail drops are reported apart (`queue_tail_drops`),
as they are the program's semantics, not a switch limit. The file is replaced atomically.
"""
from __future__ import annotations

import json
import os
import stat
import threading
from typing import Any, Callable

from p4target.atomic_files import write_text

INTERVAL = 1.0


def stats_path(log_file: str | None) -> str | None:
    """`<log>.stats.json` for `--log-file`, or for the file stdout is redirected to; else None."""
    if log_file:
        return log_file + ".stats.json"
    try:
        if stat.S_ISREG(os.fstat(1).st_mode):
            target = os.readlink("/proc/self/fd/1")
            if target.startswith("/"):
                return target + ".stats.json"
    except OSError:
        pass
    return None


class StatsFile:
    """Writes `collect()` to `path` every `interval` seconds from one thread, and at `stop()`."""

    def __init__(self, path: str, collect: Callable[[], dict[str, Any]], interval: float = INTERVAL) -> None:
        self.path = path
        self._collect = collect
        self._interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def start(self) -> None:
        if self._thread is None:
            self.write()    # at once: a copy left by an earlier switch must not pass for ours
            self._thread = threading.Thread(target=self._run, name="p4target-stats", daemon=True)
            self._thread.start()

    def halt(self) -> None:
        """Stop the periodic writes (the file stays as last written)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def stop(self) -> dict[str, Any]:
        """Stop the periodic writes, write the final figures and return them."""
        self.halt()
        return self.write()

    def write(self) -> dict[str, Any]:
        """Collect and write once; an unwritable file is skipped (the run goes on)."""
        with self._lock:
            stats = self._collect()
            try:
                write_text(self.path, json.dumps(stats, indent=1, sort_keys=True))
            except OSError:
                pass
            return stats

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            self.write()
