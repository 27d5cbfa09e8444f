"""A small in-process P4Runtime gRPC server for the controller's unit tests.

It is a real gRPC server on a local port (the controller talks to it over the network stack),
with a deliberately simple store: entities keyed by their identity, arbitration by election id,
per-update error statuses in the trailing metadata like P4Runtime servers send them, counters
the test sets, and a hook that makes chosen updates fail. It does not execute packets.
"""
from __future__ import annotations

import queue
import threading
from concurrent import futures
from typing import Callable

import grpc
from google.protobuf import any_pb2
from google.rpc import code_pb2, status_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

FailHook = Callable[[p4runtime_pb2.Update], tuple[int, str] | None]


def entity_key(entity: p4runtime_pb2.Entity) -> tuple:
    """What identifies an entity on a switch."""
    kind = entity.WhichOneof("entity")
    if kind == "table_entry":
        te = entity.table_entry
        match = tuple(sorted(fm.SerializeToString(deterministic=True) for fm in te.match))
        return ("table", te.table_id, match, te.priority, te.is_default_action)
    if kind == "action_profile_member":
        m = entity.action_profile_member
        return ("member", m.action_profile_id, m.member_id)
    if kind == "action_profile_group":
        g = entity.action_profile_group
        return ("group", g.action_profile_id, g.group_id)
    if kind == "packet_replication_engine_entry":
        pre = entity.packet_replication_engine_entry
        if pre.HasField("multicast_group_entry"):
            return ("mcast", pre.multicast_group_entry.multicast_group_id)
        return ("clone", pre.clone_session_entry.session_id)
    raise ValueError(kind)


class _Servicer(p4runtime_pb2_grpc.P4RuntimeServicer):
    def __init__(self, server: "TestP4RuntimeServer") -> None:
        self.s = server

    # -- arbitration -----------------------------------------------------------------------
    def StreamChannel(self, request_iterator, context):
        out: "queue.Queue[p4runtime_pb2.StreamMessageResponse | None]" = queue.Queue()
        me = {"queue": out, "eid": None}

        def pump() -> None:
            try:
                for req in request_iterator:
                    if req.HasField("arbitration"):
                        eid = (req.arbitration.election_id.high, req.arbitration.election_id.low)
                        with self.s.lock:
                            me["eid"] = eid
                            if me not in self.s.streams:
                                self.s.streams.append(me)
                            self.s._announce()
                    elif req.HasField("packet"):
                        self.s.packets_out.append(req.packet)
            except grpc.RpcError:
                pass
            finally:
                with self.s.lock:
                    if me in self.s.streams:
                        self.s.streams.remove(me)
                        self.s._announce()
                out.put(None)

        threading.Thread(target=pump, daemon=True).start()
        while True:
            msg = out.get()
            if msg is None:
                return
            yield msg

    def _check_primary(self, eid_msg, context) -> None:
        eid = (eid_msg.high, eid_msg.low)
        with self.s.lock:
            primary = self.s.primary()
        if primary is None or eid != primary:
            context.abort(grpc.StatusCode.PERMISSION_DENIED, "not primary")

    # -- pipeline --------------------------------------------------------------------------
    def SetForwardingPipelineConfig(self, request, context):
        self._check_primary(request.election_id, context)
        with self.s.lock:
            self.s.p4info = request.config.p4info
            self.s.device_config = request.config.p4_device_config
            self.s.cookie = request.config.cookie.cookie
            self.s.store.clear()
            self.s.pipeline_pushes += 1
        return p4runtime_pb2.SetForwardingPipelineConfigResponse()

    def GetForwardingPipelineConfig(self, request, context):
        resp = p4runtime_pb2.GetForwardingPipelineConfigResponse()
        with self.s.lock:
            if self.s.p4info is None:
                context.abort(grpc.StatusCode.FAILED_PRECONDITION, "no pipeline")
            resp.config.p4info.CopyFrom(self.s.p4info)
            resp.config.cookie.cookie = self.s.cookie
        return resp

    # -- write -----------------------------------------------------------------------------
    def Write(self, request, context):
        self._check_primary(request.election_id, context)
        results: list[tuple[int, str]] = []
        with self.s.lock:
            self.s.write_batches.append(list(request.updates))
            for upd in request.updates:
                results.append(self._apply(upd))
        if all(code == code_pb2.OK for code, _ in results):
            return p4runtime_pb2.WriteResponse()
        status = status_pb2.Status(code=code_pb2.UNKNOWN, message="Write failure")
        for code, msg in results:
            err = p4runtime_pb2.Error(canonical_code=code, message=msg)
            any_msg = any_pb2.Any()
            any_msg.Pack(err)
            status.details.append(any_msg)
        context.abort_with_status(_RichStatus(status))

    def _apply(self, upd: p4runtime_pb2.Update) -> tuple[int, str]:
        if self.s.fail_hook is not None:
            forced = self.s.fail_hook(upd)
            if forced is not None:
                return forced
        key = entity_key(upd.entity)
        store = self.s.store
        if upd.type == p4runtime_pb2.Update.INSERT:
            if key in store:
                return code_pb2.ALREADY_EXISTS, "entity exists"
            store[key] = upd.entity
        elif upd.type == p4runtime_pb2.Update.MODIFY:
            if key not in store:
                return code_pb2.NOT_FOUND, "no such entity"
            store[key] = upd.entity
        elif upd.type == p4runtime_pb2.Update.DELETE:
            if key not in store:
                return code_pb2.NOT_FOUND, "no such entity"
            if key[0] == "member" and any(
                    k[0] == "group" and key[2] in {m.member_id for m in e.action_profile_group.members}
                    for k, e in store.items()):
                return code_pb2.FAILED_PRECONDITION, "member used by a group"
            del store[key]
        else:
            return code_pb2.INVALID_ARGUMENT, "bad update type"
        return code_pb2.OK, ""

    # -- read ------------------------------------------------------------------------------
    def Read(self, request, context):
        resp = p4runtime_pb2.ReadResponse()
        with self.s.lock:
            for want in request.entities:
                kind = want.WhichOneof("entity")
                if kind == "counter_entry":
                    ce = want.counter_entry
                    size = self.s.counter_sizes.get(ce.counter_id, 0)
                    indexes = [ce.index.index] if ce.HasField("index") else range(size)
                    for i in indexes:
                        pk, by = self.s.counters.get((ce.counter_id, i), (0, 0))
                        e = resp.entities.add()
                        e.counter_entry.counter_id = ce.counter_id
                        e.counter_entry.index.index = i
                        e.counter_entry.data.packet_count = pk
                        e.counter_entry.data.byte_count = by
                    continue
                for key, ent in self.s.store.items():
                    if ent.WhichOneof("entity") != kind:
                        continue
                    if kind == "table_entry" and want.table_entry.table_id not in (0, ent.table_entry.table_id):
                        continue
                    if kind == "action_profile_member" and want.action_profile_member.action_profile_id \
                            not in (0, ent.action_profile_member.action_profile_id):
                        continue
                    if kind == "action_profile_group" and want.action_profile_group.action_profile_id \
                            not in (0, ent.action_profile_group.action_profile_id):
                        continue
                    resp.entities.add().CopyFrom(ent)
        yield resp


class _RichStatus(grpc.Status):
    def __init__(self, status: status_pb2.Status) -> None:
        self.code = grpc.StatusCode.UNKNOWN
        self.details = status.message
        self.trailing_metadata = (("grpc-status-details-bin", status.SerializeToString()),)


class TestP4RuntimeServer:
    """Start with ``start()``; ``address`` is where clients connect; ``stop()`` ends it."""

    __test__ = False  # not a pytest test class

    def __init__(self, port: int = 0) -> None:
        self.lock = threading.RLock()
        self.store: dict[tuple, p4runtime_pb2.Entity] = {}
        self.streams: list[dict] = []
        self.p4info = None
        self.device_config = b""
        self.cookie = 0
        self.pipeline_pushes = 0
        self.fail_hook: FailHook | None = None
        self.write_batches: list[list[p4runtime_pb2.Update]] = []
        self.counters: dict[tuple[int, int], tuple[int, int]] = {}
        self.counter_sizes: dict[int, int] = {}
        self.packets_out: list[p4runtime_pb2.PacketOut] = []
        self._port = port
        self._server: grpc.Server | None = None
        self.address = ""

    def start(self) -> "TestP4RuntimeServer":
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
        p4runtime_pb2_grpc.add_P4RuntimeServicer_to_server(_Servicer(self), self._server)
        self._port = self._server.add_insecure_port(f"127.0.0.1:{self._port}")
        self.address = f"127.0.0.1:{self._port}"
        self._server.start()
        return self

    def stop(self) -> None:
        """Stop serving and forget all state (as a switch process that exits)."""
        if self._server is not None:
            self._server.stop(grace=0).wait()
            self._server = None
        with self.lock:
            self.streams.clear()
            self.store.clear()
            self.p4info = None

    def primary(self) -> tuple[int, int] | None:
        eids = [s["eid"] for s in self.streams if s["eid"] is not None]
        return max(eids) if eids else None

    def _announce(self) -> None:
        primary = self.primary()
        for s in self.streams:
            msg = p4runtime_pb2.StreamMessageResponse()
            msg.arbitration.device_id = 1
            if primary is not None:
                msg.arbitration.election_id.high = primary[0]
                msg.arbitration.election_id.low = primary[1]
            msg.arbitration.status.code = code_pb2.OK if s["eid"] == primary else code_pb2.ALREADY_EXISTS
            s["queue"].put(msg)

    def entities(self, kind: str) -> list[p4runtime_pb2.Entity]:
        """Stored entities of one kind (table_entry, action_profile_member, ...)."""
        with self.lock:
            return [e for e in self.store.values() if e.WhichOneof("entity") == kind]

    def set_counter_sizes_from_p4info(self) -> None:
        with self.lock:
            for c in self.p4info.counters:
                self.counter_sizes[c.preamble.id] = c.size
