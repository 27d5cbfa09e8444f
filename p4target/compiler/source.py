"""Source locations of P4 program text (file, line, column; 1-based)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SourceLocation:
    """A position in an (unpreprocessed) source file; line and column are 1-based."""

    file: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


UNKNOWN_LOCATION = SourceLocation("<unknown>", 0, 0)
