"""Typed errors of the controller package.

Every error the controller raises derives from :class:`ControllerError`; ``str()`` is one line
fit for a CLI. gRPC failures are mapped to the subclasses below by :func:`from_grpc`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence


class ControllerError(Exception):
    """Base of every controller error."""


class ConfigError(ControllerError):
    """A topology description, P4Info or command-line value is wrong."""


class TopologyError(ConfigError):
    """A topology description (docs/contracts.md) is malformed or inconsistent; names the key."""


class PolicyError(ControllerError):
    """A policy document is invalid; names the source and the field (``FILE: a.b[1].c: msg``)."""

    def __init__(self, field: str, message: str, source: str | None = None) -> None:
        self.field = field
        self.message = message
        self.source = source
        super().__init__(str(self))

    def __str__(self) -> str:
        where = f"{self.source}: " if self.source else ""
        return f"{where}{self.field}: {self.message}" if self.field else f"{where}{self.message}"

    def with_source(self, source: str) -> "PolicyError":
        """The same error attributed to ``source`` (a file name)."""
        return PolicyError(self.field, self.message, source)


class P4NameError(ControllerError):
    """A P4 object, field or parameter the controller needs is missing from the P4Info."""


class SwitchError(ControllerError):
    """A switch operation failed; ``switch`` names the switch when known."""

    def __init__(self, message: str, switch: str | None = None) -> None:
        self.message = message
        self.switch = switch
        super().__init__(str(self))

    def __str__(self) -> str:
        return f"{self.switch}: {self.message}" if self.switch else self.message


class UnreachableError(SwitchError):
    """The switch did not answer in time or refused the connection."""


class TimeoutError_(UnreachableError):
    """An RPC exceeded its deadline."""


class NotPrimaryError(SwitchError):
    """Another controller is primary for the switch; we are backup and must not write."""

    def __init__(self, message: str, switch: str | None = None,
                 primary_election_id: int | None = None) -> None:
        self.primary_election_id = primary_election_id
        super().__init__(message, switch)


class RpcError(SwitchError):
    """A P4Runtime RPC failed with a gRPC status other than the ones mapped more precisely."""

    def __init__(self, message: str, switch: str | None = None, code: str = "UNKNOWN") -> None:
        self.code = code
        super().__init__(message, switch)


class InvalidArgumentError(RpcError):
    """The switch rejected a request as malformed (gRPC INVALID_ARGUMENT)."""


class NotFoundError(RpcError):
    """The entity does not exist on the switch (gRPC NOT_FOUND)."""


class AlreadyExistsError(RpcError):
    """The entity already exists on the switch (gRPC ALREADY_EXISTS)."""


class ResourceExhaustedError(RpcError):
    """A table or profile is full (gRPC RESOURCE_EXHAUSTED)."""


class PipelineError(RpcError):
    """No pipeline is loaded, or the switch refused the one pushed (FAILED_PRECONDITION...)."""


class UnimplementedError(RpcError):
    """The switch does not implement the request (gRPC UNIMPLEMENTED)."""


@dataclass(frozen=True)
class UpdateError:
    """The outcome of one update of a failed batch write (code 0 = that update succeeded)."""

    index: int
    code: str
    message: str

    @property
    def ok(self) -> bool:
        """True when this update was applied."""
        return self.code == "OK"


class WriteError(RpcError):
    """A batch write failed; ``updates`` has one :class:`UpdateError` per update (when known)."""

    def __init__(self, message: str, switch: str | None = None, code: str = "UNKNOWN",
                 updates: Sequence[UpdateError] = ()) -> None:
        self.updates = list(updates)
        super().__init__(message, switch, code)

    def failed(self) -> list[UpdateError]:
        """The updates that were not applied."""
        return [u for u in self.updates if not u.ok]


class ThriftError(SwitchError):
    """A call to the switch's Thrift (runtime CLI) port failed."""


class DaemonError(ControllerError):
    """The controller daemon is unreachable or answered with an error."""


class RemoteError(ControllerError):
    """An error the daemon reported; ``kind`` is the name of its error class there."""

    def __init__(self, message: str, kind: str = "ControllerError") -> None:
        self.kind = kind
        super().__init__(message)


_BY_CODE = {
    "INVALID_ARGUMENT": InvalidArgumentError,
    "NOT_FOUND": NotFoundError,
    "ALREADY_EXISTS": AlreadyExistsError,
    "RESOURCE_EXHAUSTED": ResourceExhaustedError,
    "FAILED_PRECONDITION": PipelineError,
    "UNIMPLEMENTED": UnimplementedError,
}


def from_grpc(err: Exception, switch: str | None = None, what: str = "RPC") -> SwitchError:
    """Map a ``grpc.RpcError`` to the matching typed error (one-line message)."""
    code_obj = getattr(err, "code", None)
    code = code_obj().name if callable(code_obj) else "UNKNOWN"
    details = err.details() if callable(getattr(err, "details", None)) else str(err)
    details = " ".join((details or "").split())
    message = f"{what} failed: {code}" + (f": {details}" if details else "")
    if code == "DEADLINE_EXCEEDED":
        return TimeoutError_(f"{what} timed out", switch)
    if code == "UNAVAILABLE":
        return UnreachableError(f"{what} failed: switch unreachable" +
                                (f" ({details})" if details else ""), switch)
    if code == "PERMISSION_DENIED":
        return NotPrimaryError(f"{what} refused: not the primary controller", switch)
    cls = _BY_CODE.get(code, RpcError)
    return cls(message, switch, code)
