"""Typed errors of the STF runner."""
from __future__ import annotations

from p4target.engine.errors import EngineError


class StfError(EngineError):
    """Base of STF runner errors."""


class StfSyntaxError(StfError):
    """A malformed STF line; str() is `FILE:LINE: error: message`."""

    def __init__(self, file: str, line: int, message: str) -> None:
        super().__init__(f"{file}:{line}: error: {message}")
        self.file, self.line, self.message = file, line, message
