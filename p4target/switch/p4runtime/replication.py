"""Packet replication engine: multicast groups and clone sessions.

A clone session with one replica of instance 0 mirrors to that port; any other replica set
is mirrored through a hidden multicast group numbered above the 16-bit `mcast_grp` range, so
the data plane cannot select it and reads of multicast groups do not show it.
"""
from __future__ import annotations

from typing import Iterator

from p4.v1 import p4runtime_pb2

from .errors import Code, P4RuntimeError, invalid, not_found
from .state import PipelineState

Update = p4runtime_pb2.Update
HIDDEN_MGRP_BASE = 1 << 16
PORT_BITS = 32


def _replicas(replicas) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for r in replicas:
        kind = r.WhichOneof("port_kind")
        if kind == "port":
            if not r.port or len(r.port) > PORT_BITS // 8:
                raise invalid(f"replica port 0x{r.port.hex()} is not a 1..4 byte string")
            port = int.from_bytes(r.port, "big")
        else:
            port = r.egress_port
        pair = (port, r.instance)
        if pair in out:
            raise invalid(f"replica (port {port}, instance {r.instance}) listed twice")
        out.append(pair)
    return out


class Replication:
    """Write and read `PacketReplicationEngineEntry` entities."""

    def __init__(self, state: PipelineState) -> None:
        self.s = state
        self.engine = state.engine

    def write(self, op: int, pre: p4runtime_pb2.PacketReplicationEngineEntry) -> None:
        which = pre.WhichOneof("type")
        if which == "multicast_group_entry":
            self._write_group(op, pre.multicast_group_entry)
        elif which == "clone_session_entry":
            self._write_session(op, pre.clone_session_entry)
        else:
            raise invalid("packet replication engine entry is empty")

    def _write_group(self, op: int, g: p4runtime_pb2.MulticastGroupEntry) -> None:
        mgrp = g.multicast_group_id
        if not 0 < mgrp < HIDDEN_MGRP_BASE:
            raise invalid(f"multicast group id {mgrp} out of range 1..{HIDDEN_MGRP_BASE - 1}")
        exists = mgrp in self.engine.mc_groups
        if op == Update.INSERT and exists:
            raise P4RuntimeError(Code.ALREADY_EXISTS, f"multicast group {mgrp} exists")
        if op in (Update.MODIFY, Update.DELETE) and not exists:
            raise not_found(f"no multicast group {mgrp}")
        if op == Update.DELETE:
            self.engine.mc_group_set(mgrp, [])
            self.engine.mc_mgrp_destroy(mgrp)
            self.s.mc_replicas.pop(mgrp, None)
            return
        if op not in (Update.INSERT, Update.MODIFY):
            raise invalid("update type must be INSERT, MODIFY or DELETE")
        self.engine.mc_group_set(mgrp, _replicas(g.replicas))
        self.s.mc_replicas[mgrp] = list(g.replicas)

    def _write_session(self, op: int, c: p4runtime_pb2.CloneSessionEntry) -> None:
        sid = c.session_id
        exists = sid in self.s.clone_sessions
        if op == Update.INSERT and exists:
            raise P4RuntimeError(Code.ALREADY_EXISTS, f"clone session {sid} exists")
        if op in (Update.MODIFY, Update.DELETE) and not exists:
            raise not_found(f"no clone session {sid}")
        hidden = HIDDEN_MGRP_BASE + sid
        if op == Update.DELETE:
            self.engine.mirroring_delete(sid)
            self._drop_hidden(hidden)
            del self.s.clone_sessions[sid]
            return
        if op not in (Update.INSERT, Update.MODIFY):
            raise invalid("update type must be INSERT, MODIFY or DELETE")
        replicas = _replicas(c.replicas)
        if not replicas:
            raise invalid(f"clone session {sid} needs at least one replica")
        if len(replicas) == 1 and replicas[0][1] == 0:
            self.engine.mirroring_add(sid, port=replicas[0][0], truncate=c.packet_length_bytes)
            self._drop_hidden(hidden)
        else:
            self.engine.mc_group_set(hidden, replicas)
            self.engine.mirroring_add(sid, truncate=c.packet_length_bytes, mgrp=hidden)
        self.s.clone_sessions[sid] = p4runtime_pb2.CloneSessionEntry.FromString(c.SerializeToString())

    def _drop_hidden(self, mgrp: int) -> None:
        if mgrp in self.engine.mc_groups:
            self.engine.mc_group_set(mgrp, [])
            self.engine.mc_mgrp_destroy(mgrp)

    def read(self, pre: p4runtime_pb2.PacketReplicationEngineEntry) -> Iterator[p4runtime_pb2.Entity]:
        which = pre.WhichOneof("type")
        if which == "clone_session_entry":
            sid = pre.clone_session_entry.session_id
            for s in ([sid] if sid else sorted(self.s.clone_sessions)):
                if s in self.s.clone_sessions:
                    yield p4runtime_pb2.Entity(packet_replication_engine_entry=p4runtime_pb2.PacketReplicationEngineEntry(
                        clone_session_entry=self.s.clone_sessions[s]))
            return
        mgrp = pre.multicast_group_entry.multicast_group_id
        groups = [mgrp] if mgrp else sorted(g for g in self.engine.mc_groups if g < HIDDEN_MGRP_BASE)
        for g in groups:
            if g not in self.engine.mc_groups:
                continue
            out = p4runtime_pb2.MulticastGroupEntry(multicast_group_id=g)
            if g in self.s.mc_replicas:
                out.replicas.extend(self.s.mc_replicas[g])
            else:  # created through another front door (Thrift)
                for port, rid in self.engine.mc_group_replicas(g):
                    out.replicas.add(egress_port=port, instance=rid)
            yield p4runtime_pb2.Entity(packet_replication_engine_entry=p4runtime_pb2.PacketReplicationEngineEntry(
                multicast_group_entry=out))
