"""Typed errors of the p4target package.

Every error the embedded P4 target raises for a user mistake derives from
:class:`P4TargetError`. Compiler errors carry a source location and print as
``FILE:LINE:COL: error: message`` so editors and users can jump to the spot.
"""
from __future__ import annotations



class P4TargetError(Exception):
    """Base of every p4target error."""


class CompileError(P4TargetError):
    """A P4 program is wrong (syntax, preprocessing, semantics).

    ``str()`` is ``FILE:LINE:COL: error: message`` (the location parts that are
    unknown are left out).
    """

    def __init__(self, message: str, file: str | None = None,
                 line: int | None = None, column: int | None = None) -> None:
        self.message = message
        self.file = file
        self.line = line
        self.column = column
        super().__init__(self._render())

    def _render(self) -> str:
        parts = [p for p in (self.file, self.line, self.column) if p is not None]
        prefix = ":".join(str(p) for p in parts)
        return f"{prefix}: error: {self.message}" if prefix else f"error: {self.message}"

    def __str__(self) -> str:
        return self._render()

    @classmethod
    def at(cls, loc: object, message: str) -> "CompileError":
        """Build the error at a ``SourceLocation``-like object (file, line, column attrs)."""
        return cls(message, getattr(loc, "file", None), getattr(loc, "line", None),
                   getattr(loc, "column", None))


class UnsupportedError(CompileError):
    """A valid P4_16 construct outside the subset this compiler supports.

    ``construct`` names it; the message says so.
    """

    def __init__(self, construct: str, file: str | None = None,
                 line: int | None = None, column: int | None = None,
                 detail: str = "") -> None:
        self.construct = construct
        message = f"unsupported construct: {construct}" + (f" ({detail})" if detail else "")
        super().__init__(message, file, line, column)

    @classmethod
    def at(cls, loc: object, construct: str, detail: str = "") -> "UnsupportedError":  # type: ignore[override]
        return cls(construct, getattr(loc, "file", None), getattr(loc, "line", None),
                   getattr(loc, "column", None), detail)
