"""P4Runtime status errors and the mapping of engine/switch errors onto gRPC status codes."""
from __future__ import annotations

import grpc
from google.protobuf import any_pb2
from google.rpc import code_pb2, status_pb2
from p4.v1 import p4runtime_pb2

from p4target.engine import errors as engine_errors
from p4target.switch.errors import SwitchError
from p4target.switch.target import NoCpuPortError, NoPipelineError

Code = grpc.StatusCode


class P4RuntimeError(SwitchError):
    """A request (or one update of a batch) failed with a P4Runtime/gRPC status code."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def invalid(message: str) -> P4RuntimeError:
    return P4RuntimeError(Code.INVALID_ARGUMENT, message)


def not_found(message: str) -> P4RuntimeError:
    return P4RuntimeError(Code.NOT_FOUND, message)


def unimplemented(message: str) -> P4RuntimeError:
    return P4RuntimeError(Code.UNIMPLEMENTED, message)


def as_p4runtime_error(exc: BaseException) -> P4RuntimeError:
    """The P4Runtime status an exception stands for; unexpected ones become INTERNAL."""
    if isinstance(exc, P4RuntimeError):
        return exc
    if isinstance(exc, engine_errors.DuplicateEntryError):
        return P4RuntimeError(Code.ALREADY_EXISTS, str(exc))
    if isinstance(exc, (engine_errors.NoSuchHandleError, engine_errors.UnknownNameError)):
        return P4RuntimeError(Code.NOT_FOUND, str(exc))
    if isinstance(exc, engine_errors.InvalidEntryError):
        return P4RuntimeError(Code.INVALID_ARGUMENT, str(exc))
    if isinstance(exc, engine_errors.ResourceExhaustedError):
        return P4RuntimeError(Code.RESOURCE_EXHAUSTED, str(exc))
    if isinstance(exc, (engine_errors.NoProgramError, NoPipelineError, NoCpuPortError)):
        return P4RuntimeError(Code.FAILED_PRECONDITION, str(exc))
    if isinstance(exc, engine_errors.ProgramLoadError):
        return P4RuntimeError(Code.INVALID_ARGUMENT, f"device config rejected: {exc}")
    return P4RuntimeError(Code.INTERNAL, f"{type(exc).__name__}: {exc}")


def canonical_code(code: grpc.StatusCode) -> int:
    """google.rpc.Code number of a grpc.StatusCode."""
    return code.value[0]


def p4_error(exc: P4RuntimeError | None) -> p4runtime_pb2.Error:
    """The p4.v1.Error of one update (canonical_code OK when exc is None)."""
    if exc is None:
        return p4runtime_pb2.Error(canonical_code=code_pb2.OK)
    return p4runtime_pb2.Error(canonical_code=canonical_code(exc.code), message=exc.message)


def batch_status(errors: list[P4RuntimeError | None]) -> status_pb2.Status:
    """google.rpc.Status (code UNKNOWN) holding one p4.v1.Error per update, as PI reports Write errors."""
    failed = [e for e in errors if e is not None]
    status = status_pb2.Status(code=code_pb2.UNKNOWN,
                               message=f"{len(failed)} of {len(errors)} update(s) failed: {failed[0].message}")
    for e in errors:
        detail = any_pb2.Any()
        detail.Pack(p4_error(e))
        status.details.append(detail)
    return status


KEPT_MESSAGES = 100  # failed updates that keep their message when a batch's errors are trimmed


def fit_batch_status(status: status_pb2.Status, max_bytes: int) -> status_pb2.Status:
    """`status` made to fit `max_bytes` of trailing metadata. Every update keeps its own
    p4.v1.Error and canonical code; when they do not fit, only the first failed updates keep
    their message, then none; if even the codes do not fit, the details go and the message
    says so."""
    if status.ByteSize() <= max_bytes:
        return status
    errors = []
    for detail in status.details:
        err = p4runtime_pb2.Error()
        detail.Unpack(err)
        errors.append(err)
    for kept in (KEPT_MESSAGES, 0):
        out = status_pb2.Status(code=status.code, message=status.message)
        failed = 0
        for err in errors:
            trimmed = p4runtime_pb2.Error(canonical_code=err.canonical_code)
            if err.canonical_code != code_pb2.OK:
                failed += 1
                if failed <= kept:
                    trimmed.message = err.message
            out.details.add().Pack(trimmed)
        if out.ByteSize() <= max_bytes:
            return out
    return status_pb2.Status(code=status.code, message=f"{status.message} (the per-update errors of "
                             f"{len(errors)} updates do not fit in {max_bytes} bytes of metadata)")


class ListenError(SwitchError):
    """The P4Runtime server cannot listen on the requested address."""
