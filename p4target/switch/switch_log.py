"""The switch's event log: BMv2-like lines to a file and/or the console.

Line format: `[HH:MM:SS.mmm] [p4target] [L] [thread TID] message`, L being one of
T(race) D(ebug) I(nfo) W(arn) E(rror). Packet events are logged at debug level (as BMv2
does), control operations at info level; `-L/--log-level` picks the lowest level written.
A log file rotates as BMv2's (spdlog's rotating file sink) does: when a line would take it past
`max_size` bytes, `s1.log` becomes `s1.1.log`, `s1.1.log` becomes `s1.2.log` and so on up to
`max_files` backups, and a fresh `s1.log` is started; so a file log never exceeds
`max_size x (max_files + 1)` bytes on disk.
"""
from __future__ import annotations

import os
import sys
import threading
import time
from typing import TextIO

LEVELS = {"trace": 0, "debug": 1, "info": 2, "warn": 3, "error": 4, "off": 5}
_LETTERS = {0: "T", 1: "D", 2: "I", 3: "W", 4: "E"}
DEFAULT_MAX_SIZE = 5 * 1024 * 1024  # BMv2's --log-file-max-size default
DEFAULT_MAX_FILES = 3  # BMv2's --log-file-max-files default


def rotated_name(path: str, index: int) -> str:
    """The name of backup `index` of log file `path` (`s1.log`, 1 -> `s1.1.log`), as spdlog names it."""
    if index == 0:
        return path
    stem, ext = os.path.splitext(path)
    return f"{stem}.{index}{ext}"


class SwitchLog:
    """Thread-safe line writer; a disabled level costs one integer comparison."""

    def __init__(self, *, path: str | None = None, console: bool = False, level: str = "info",
                 console_stream: TextIO | None = None, max_size: int = DEFAULT_MAX_SIZE,
                 max_files: int = DEFAULT_MAX_FILES) -> None:
        if level not in LEVELS:
            raise ValueError(f"unknown log level '{level}'")
        if max_size < 1 or max_files < 0:
            raise ValueError("the log file's max_size must be >= 1 and max_files >= 0")
        self.level = LEVELS[level]
        self._lock = threading.Lock()
        self._streams: list[TextIO] = []
        self._owned: TextIO | None = None
        self._path = path
        self._max_size = max_size
        self._max_files = max_files
        self._size = 0
        if path is not None:
            self._owned = open(path, "a", buffering=1)
            self._size = self._owned.tell()
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
            if self._owned is not None:
                self._account(len(line.encode(errors="replace")))
            for stream in self._streams:
                try:
                    stream.write(line)
                    stream.flush()
                except (OSError, ValueError):
                    pass  # a closed console must not take the data path down

    def _account(self, nbytes: int) -> None:
        """Rotate the file first if `nbytes` more would take it past the cap (lock held)."""
        if self._size + nbytes > self._max_size and self._size > 0:
            assert self._owned is not None and self._path is not None
            self._streams.remove(self._owned)
            self._owned.close()
            self._owned = None
            try:
                for index in range(self._max_files, 0, -1):
                    older = rotated_name(self._path, index - 1)
                    if os.path.exists(older):
                        os.replace(older, rotated_name(self._path, index))
                self._owned = open(self._path, "w", buffering=1)
            except OSError:
                return  # the log is lost from here on; the data path goes on
            self._streams.append(self._owned)
            self._size = 0
        self._size += nbytes

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
