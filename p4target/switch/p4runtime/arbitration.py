"""Client arbitration per (device, role): the stream with the highest election id is primary.

Each arbitration response carries the primary's election id (or, with no primary, the highest
one seen) and a status: OK for the primary, ALREADY_EXISTS for a backup while a primary
exists, NOT_FOUND when there is none. When the primary changes every stream of the role is
told; a client that did not set an election id is a backup that never becomes primary. A
stream may move to another role with a later update. Writes need the primary's election id,
or, as PI allows for tools and tests, no election id while the role has no primary. Pipeline
changes (SetForwardingPipelineConfig) always need the primary's election id.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Callable

from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2

from .admission import Standing
from .errors import Code, P4RuntimeError

Notify = Callable[[Any, p4runtime_pb2.StreamMessageResponse], None]


def election_id_of(msg: Any) -> int | None:
    """The 128-bit election id of a message, None when the field is unset."""
    if not msg.HasField("election_id"):
        return None
    return (msg.election_id.high << 64) | msg.election_id.low


@dataclass
class _Role:
    members: dict[Any, int | None] = field(default_factory=dict)  # stream -> election id
    max_seen: int = 0
    primary: Any = None
    role_proto: p4runtime_pb2.Role | None = None


class Arbitration:
    """Tracks the streams of each role and which one is primary."""

    def __init__(self, device_id: int, notify: Notify) -> None:
        self.device_id = device_id
        self._notify = notify
        self._lock = threading.Lock()
        self._roles: dict[str, _Role] = {}
        self._stream_role: dict[Any, str] = {}

    def update(self, stream: Any, msg: p4runtime_pb2.MasterArbitrationUpdate) -> None:
        """Apply a stream's arbitration request and send the responses; raises P4RuntimeError
        (the stream must then be closed) for a wrong device id, a changed role or a
        duplicate election id."""
        name = msg.role.name if msg.HasField("role") else ""
        eid = election_id_of(msg)
        responses = []
        with self._lock:
            old = self._stream_role.get(stream)
            if msg.device_id != self.device_id:
                code = Code.NOT_FOUND if old is None else Code.FAILED_PRECONDITION
                raise P4RuntimeError(code, f"unknown device id {msg.device_id} (this is {self.device_id})")
            role = self._roles.setdefault(name, _Role())
            if eid is not None and any(s is not stream and e == eid for s, e in role.members.items()):
                raise P4RuntimeError(Code.INVALID_ARGUMENT,
                                     f"election id {eid} is already used by another client of this role")
            if old is not None and old != name:  # the client moves to another role
                left = self._roles[old]
                left.members.pop(stream, None)
                if self._elect(left):
                    responses += [(s, self._response(left, s)) for s in left.members]
            role.members[stream] = eid
            role.role_proto = msg.role if msg.HasField("role") else None
            self._stream_role[stream] = name
            if eid is not None:
                role.max_seen = max(role.max_seen, eid)
            changed = self._elect(role)
            targets = list(role.members) if changed else [stream]
            responses += [(s, self._response(role, s)) for s in targets]
        for s, resp in responses:
            self._notify(s, resp)

    def remove(self, stream: Any) -> None:
        """A stream ended: drop it and, if it was primary, tell the rest of its role."""
        with self._lock:
            name = self._stream_role.pop(stream, None)
            if name is None:
                return
            role = self._roles[name]
            role.members.pop(stream, None)
            changed = self._elect(role)
            responses = [(s, self._response(role, s)) for s in role.members] if changed else []
        for s, resp in responses:
            self._notify(s, resp)

    def may_write(self, role_name: str, election_id: int | None) -> bool:
        """Whether a Write/SetForwardingPipelineConfig with this role and election id is allowed:
        it carries the primary's election id, or (as PI allows, for tools and tests) the role
        has no primary and the request no election id."""
        with self._lock:
            role = self._roles.get(role_name)
            if role is None or role.primary is None:
                return not election_id
            return election_id is not None and role.members.get(role.primary) == election_id

    def is_primary(self, role_name: str, election_id: int | None) -> bool:
        """Whether `election_id` is the election id of the role's primary client. Unlike
        `may_write` there is no exception for a role without a primary: the P4Runtime spec asks
        SetForwardingPipelineConfig (every action, VERIFY included) to come from the primary."""
        with self._lock:
            role = self._roles.get(role_name)
            if role is None or role.primary is None or election_id is None:
                return False
            return role.members.get(role.primary) == election_id

    def standing(self, stream: Any) -> Standing:
        """Whether the stream has arbitrated, its election id, whether it is primary, its role."""
        with self._lock:
            name = self._stream_role.get(stream)
            if name is None:
                return Standing(False)
            role = self._roles[name]
            return Standing(True, role.members.get(stream), role.primary is stream, name)

    def is_primary_stream(self, stream: Any) -> bool:
        with self._lock:
            name = self._stream_role.get(stream)
            return name is not None and self._roles[name].primary is stream

    def primaries(self) -> list[Any]:
        """The primary stream of every role that has one."""
        with self._lock:
            return [r.primary for r in self._roles.values() if r.primary is not None]

    @staticmethod
    def _elect(role: _Role) -> bool:
        candidates = [(e, s) for s, e in role.members.items() if e is not None]
        best = max(candidates, key=lambda c: c[0])[1] if candidates else None
        changed = best is not role.primary
        role.primary = best
        return changed

    def _response(self, role: _Role, stream: Any) -> p4runtime_pb2.StreamMessageResponse:
        resp = p4runtime_pb2.StreamMessageResponse()
        arb = resp.arbitration
        arb.device_id = self.device_id
        if role.role_proto is not None:
            arb.role.CopyFrom(role.role_proto)
        eid = role.members[role.primary] if role.primary is not None else role.max_seen
        arb.election_id.high, arb.election_id.low = eid >> 64, eid & ((1 << 64) - 1)
        if role.primary is stream:
            arb.status.code, arb.status.message = code_pb2.OK, "primary"
        elif role.primary is not None:
            arb.status.code, arb.status.message = code_pb2.ALREADY_EXISTS, "backup: a primary exists"
        else:
            arb.status.code, arb.status.message = code_pb2.NOT_FOUND, "no primary"
        return resp
