"""JSON-lines event log of an agent (one object per line, flushed), to a file or stdout."""
from __future__ import annotations

import json
import sys
import time
from typing import Any, TextIO

from hosts.errors import ConfigError


class JsonLog:
    """Writes `{"event": ..., "t": unix time, ...}` lines to `path` (None or '-' = stdout)."""

    def __init__(self, path: str | None, **common: Any) -> None:
        self.common = common
        self._own = path not in (None, "-")
        try:
            self._out: TextIO = open(path, "a") if self._own else sys.stdout
        except OSError as exc:
            raise ConfigError(f"cannot open --log {path}: {exc.strerror}") from None

    def write(self, event: str, **fields: Any) -> None:
        record = {"event": event, "t": round(time.time(), 6), **self.common, **fields}
        self._out.write(json.dumps(record, separators=(",", ":")) + "\n")
        self._out.flush()

    def close(self) -> None:
        if self._own:
            self._out.close()
