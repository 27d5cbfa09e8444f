"""Bringing a switch from its installed state to a desired one: diff, ordered batches, rollback.

Only differences are written. Writes go in dependency order (members, then groups, then table
entries; deletions the other way round), one batch per level. When a batch fails, every update
already applied - in earlier batches and in the failed one - is undone in reverse order, so the
switch is left as it was before; the original error is raised.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Protocol, Sequence

from p4.v1 import p4runtime_pb2

from controller import errors
from controller.entries import ORDER, Codec, Entity


class Writer(Protocol):
    """What sync needs from a connection (``SwitchConnection`` fits)."""

    name: str

    def write(self, updates: Sequence[p4runtime_pb2.Update]) -> None: ...


@dataclass(frozen=True)
class Op:
    """One update: INSERT/MODIFY/DELETE of ``entity``; ``old`` is the entity a MODIFY replaces."""

    kind: str
    entity: Entity
    old: Entity | None = None

    def inverse(self) -> "Op":
        """The op that undoes this one."""
        if self.kind == "INSERT":
            return Op("DELETE", self.entity)
        if self.kind == "DELETE":
            return Op("INSERT", self.entity)
        assert self.old is not None
        return Op("MODIFY", self.old, self.entity)


@dataclass
class Changes:
    """The updates that turn installed state into desired state."""

    inserts: list[Entity] = field(default_factory=list)
    modifies: list[tuple[Entity, Entity]] = field(default_factory=list)  # (old, new)
    deletes: list[Entity] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.inserts or self.modifies or self.deletes)

    def __len__(self) -> int:
        return len(self.inserts) + len(self.modifies) + len(self.deletes)

    def batches(self) -> list[list[Op]]:
        """Ordered batches: inserts/modifies by level up, then deletes by level down."""
        levels = sorted(set(ORDER.values()))
        out: list[list[Op]] = []
        for level in levels:
            batch = [Op("INSERT", e) for e in self.inserts if ORDER[type(e)] == level]
            batch += [Op("MODIFY", new, old) for old, new in self.modifies if ORDER[type(new)] == level]
            if batch:
                out.append(batch)
        for level in reversed(levels):
            batch = [Op("DELETE", e) for e in self.deletes if ORDER[type(e)] == level]
            if batch:
                out.append(batch)
        return out

    def summary(self) -> dict[str, int]:
        """Counts of inserted, modified and deleted entities."""
        return {"inserted": len(self.inserts), "modified": len(self.modifies),
                "deleted": len(self.deletes)}


def diff(desired: Iterable[Entity], installed: Iterable[Entity]) -> Changes:
    """Entities compared by key: new keys are inserted, changed values modified, extra deleted."""
    want = {e.key: e for e in desired}
    have = {e.key: e for e in installed}
    changes = Changes()
    for key, entity in want.items():
        old = have.get(key)
        if old is None:
            changes.inserts.append(entity)
        elif old != entity:
            changes.modifies.append((old, entity))
    changes.deletes = [e for k, e in have.items() if k not in want]
    return changes


def _write(conn: Writer, codec: Codec, ops: Sequence[Op]) -> None:
    conn.write([codec.update(op.kind, op.entity) for op in ops])


def apply_changes(conn: Writer, codec: Codec, changes: Changes) -> list[Op]:
    """Write ``changes``; on failure undo what was applied and re-raise. Returns the ops done."""
    done: list[list[Op]] = []
    for batch in changes.batches():
        try:
            _write(conn, codec, batch)
        except errors.WriteError as exc:
            if exc.updates:
                done.append([op for op, u in zip(batch, exc.updates) if u.ok])
            else:
                # no per-update status: undo the whole batch, tolerating what did not happen
                undo_tolerant(conn, codec, batch)
            rollback(conn, codec, done, exc)
            raise
        except errors.ControllerError as exc:
            rollback(conn, codec, done, exc)
            raise
        done.append(list(batch))
    return [op for batch in done for op in batch]


def rollback(conn: Writer, codec: Codec, done: Sequence[Sequence[Op]], cause: Exception) -> None:
    """Undo the applied batches ``done``: inverse ops, batches in reverse order.

    The forward batch order respected dependencies (members before groups before entries,
    deletions the other way), so its reverse with inverted ops respects them too.
    """
    try:
        for batch in reversed(done):
            if batch:
                _write(conn, codec, [op.inverse() for op in batch])
    except errors.ControllerError as exc:
        raise errors.WriteError(
            f"{cause}; rollback also failed ({exc}): the switch holds a partial update",
            getattr(conn, "name", None)) from None


def undo_tolerant(conn: Writer, codec: Codec, batch: Sequence[Op]) -> None:
    """Undo each op of ``batch`` alone, ignoring those that turn out not to have been applied."""
    for op in reversed(batch):
        try:
            _write(conn, codec, [op.inverse()])
        except (errors.NotFoundError, errors.AlreadyExistsError, errors.WriteError):
            pass
