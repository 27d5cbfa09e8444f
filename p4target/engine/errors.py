"""Typed errors of the P4 engine (runtime API and BMv2 JSON loader)."""
from __future__ import annotations

try:  # the shared base lives in p4target/errors.py once the compiler package provides it
    from p4target.errors import P4TargetError as _Base
except ImportError:  # pragma: no cover - until then the engine has its own base
    class _Base(Exception):
        """Base of every p4target error."""


class EngineError(_Base):
    """Base of every error raised by p4target.engine."""


class ProgramLoadError(EngineError):
    """The BMv2 JSON is malformed or uses something the engine does not support."""


class NoProgramError(EngineError):
    """An operation needs a loaded program and none is loaded."""


class UnknownNameError(EngineError):
    """A table, action, counter, meter, register, profile or other object name is unknown."""


class InvalidEntryError(EngineError):
    """A table entry, action data, key or index is malformed or out of range."""


class DuplicateEntryError(InvalidEntryError):
    """A table entry with the same key already exists."""


class NoSuchHandleError(InvalidEntryError):
    """An entry, member, group, node or session handle does not exist."""


class ResourceExhaustedError(EngineError):
    """A table or profile is full."""
