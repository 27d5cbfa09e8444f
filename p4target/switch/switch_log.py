"""The switch's event log: BMv2-like lines to a file and/or the console.

Line format: `[HH:MM:SS.mmm] [p4target] [L] [thread TID] message`, L being one of
T(race) D(ebug) I(nfo) W(arn) E(rror). Packet events are logged at debug level (as BMv2
does), control operations at info level; `-L/--log-level` picks the lowest level written.
"""
from __future__ import annotations

import sys
import threading
import time
from typing import TextIO

LEVELS = {"trace": 0, "debug": 1, "info": 2, "warn": 3, "error": 4, "off": 5}
_LETTERS = {0: "T", 1: "D", 2: "I", 3: "W", 4: "E"}


class SwitchLog:
    """Thread-safe line writer; a disabled level costs one integer comparison."""

    def __init__(self, *, path: str | None = None, console: bool = False, level: str = "info",
                 console_stream: TextIO | None = None) -> None:
        if level not in LEVELS:
            raise ValueError(f"unknown log level '{level}'")
        self.level = LEVELS[level]
        self._lock = threading.Lock()
        self._streams: list[TextIO] = []
        self._owned: TextIO | None = None
        if path is not None:
            self._owned = open(path, "a", buffering=1)
            self._streams.append(self._owned)
        if console:
            self._streams.append(console_stream or sys.stdout)
        if not self._streams:
            self.level = LEVELS["off"]

    def enabled(self, level: str) -> bool:
        """Whether a line at `level` would be written (check before building costly messages)."""
        return LEVELS[level] >= self.level

    def log(self, level: str, message: str) -> None:
        """Write one line at `level` if enabled."""
        lvl = LEVELS[level]
        if lvl < self.level:
            return
        now = time.time()
        stamp = time.strftime("%H:%M:%S", time.localtime(now)) + f".{int(now % 1 * 1000):03d}"
        line = f"[{stamp}] [p4target] [{_LETTERS[lvl]}] [thread {threading.get_native_id()}] {message}\n"
        with self._lock:
            for stream in self._streams:
                try:
                    stream.write(line)
                    stream.flush()
                except (OSError, ValueError):
                    pass  # a closed console must not take the data path down

    def trace(self, message: str) -> None:
        self.log("trace", message)

    def debug(self, message: str) -> None:
        self.log("debug", message)

    def info(self, message: str) -> None:
        self.log("info", message)

    def warn(self, message: str) -> None:
        self.log("warn", message)

    def error(self, message: str) -> None:
        self.log("error", message)

    def close(self) -> None:
        """Close the log file (the console stays open)."""
        with self._lock:
            if self._owned is not None:
                self._owned.close()
                self._streams.remove(self._owned)
                self._owned = None
