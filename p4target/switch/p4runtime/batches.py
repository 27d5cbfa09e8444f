"""Applying a Write batch with its atomicity mode.

CONTINUE_ON_ERROR applies every update it can, each one atomic for the data path (packets
may run between updates). ROLLBACK_ON_ERROR and DATAPLANE_ATOMIC first
run the batch on a scratch copy of the pipeline (a non-live engine holding a replay of the
current state); only if every update succeeds there is it applied to the live engine, under
the target lock, so the data plane sees all of it or none. Updates not applied because
another one failed report ABORTED.
"""
from __future__ import annotations

from contextlib import nullcontext
from typing import ContextManager, Sequence

from p4.v1 import p4runtime_pb2

from p4target.engine import Engine

from .entities import Entities
from .errors import Code, P4RuntimeError, as_p4runtime_error, unimplemented
from .reconcile import replay
from .translate import Translator

Atomicity = p4runtime_pb2.WriteRequest


def apply_updates(entities: Entities, updates: Sequence[p4runtime_pb2.Update],
                  lock: ContextManager | None = None) -> list[P4RuntimeError | None]:
    """Apply each update in order (each under `lock`, if given); one error (or None) per update."""
    errors: list[P4RuntimeError | None] = []
    for update in updates:
        try:
            with lock if lock is not None else nullcontext():
                entities.write(update)
            errors.append(None)
        except Exception as exc:
            errors.append(as_p4runtime_error(exc))
    return errors


def trial_run(entities: Entities, bmv2_json: dict, updates: Sequence[p4runtime_pb2.Update]) -> list[P4RuntimeError | None]:
    """The errors the batch would give, computed on a scratch copy; live state is untouched.
    The caller holds the target lock (the live state is read for the copy)."""
    state = entities.state
    engine = Engine(bmv2_json)
    scratch = replay(state, engine, Translator(state.translator.p4info, engine))
    return apply_updates(Entities(scratch, entities.digests.configs.copy()), updates)


def write_batch(entities: Entities, bmv2_json: dict, updates: Sequence[p4runtime_pb2.Update],
                atomicity: int, lock: ContextManager) -> list[P4RuntimeError | None]:
    """Apply a batch with the request's atomicity. `lock` is the target lock: taken per update
    for CONTINUE_ON_ERROR (packets interleave), for the whole batch otherwise."""
    if atomicity == Atomicity.CONTINUE_ON_ERROR:
        return apply_updates(entities, updates, lock)
    if atomicity not in (Atomicity.ROLLBACK_ON_ERROR, Atomicity.DATAPLANE_ATOMIC):
        raise unimplemented(f"atomicity {atomicity} is not supported")
    with lock:
        errors = trial_run(entities, bmv2_json, updates)
        if any(e is not None for e in errors):
            aborted = P4RuntimeError(Code.ABORTED, "not applied: another update of this atomic batch failed")
            return [e if e is not None else aborted for e in errors]
        return apply_updates(entities, updates)
