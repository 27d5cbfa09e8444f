"""The P4Runtime gRPC service of one switch and its server lifecycle."""
from __future__ import annotations

import threading
from concurrent import futures
from importlib import metadata
from typing import Callable, Iterator

import grpc
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from p4target.switch.options import TlsFiles
from p4target.switch.target import SwitchTarget

from .admission import DEFAULT_STREAM_LIMIT, StreamAdmission, eviction_error
from .arbitration import Arbitration, election_id_of
from .batches import write_batch
from .digests import DigestDispatcher
from .entities import Entities
from .errors import Code, ListenError, P4RuntimeError, as_p4runtime_error, batch_status, fit_batch_status
from .packet_io import frame_from_packet_out, packet_in_from_frame
from .pipeline import PipelineConfigs
from .state import PipelineState
from .stream import Stream, StreamHandler, _End
from .translate import Translator

READ_CHUNK = 1000  # entities per ReadResponse
READ_LOCK_BATCH = 100  # entities materialised per hold of the control lock during a Read
WRITE_TURN_S = 1.0  # longest a Read waits between batches for Writes queued behind it
MAX_MESSAGE_BYTES = 256 * 1024 * 1024
# gRPC's default of 8-16 KB cannot carry one p4.v1.Error per update of a large batch; the
# controller's channel (controller/client.py) takes the same limit
MAX_METADATA_BYTES = 16 * 1024 * 1024
DEFAULT_WORKERS = 32


def _api_version() -> str:
    try:
        return metadata.version("p4runtime")
    except metadata.PackageNotFoundError:  # pragma: no cover
        return "1.4.0"


class _Status(grpc.Status):
    def __init__(self, code: grpc.StatusCode, details: str, trailing_metadata: tuple) -> None:
        self.code, self.details, self.trailing_metadata = code, details, trailing_metadata


def _check_deadline(context) -> None:
    """DEADLINE_EXCEEDED (nothing applied) when the client's deadline has already passed."""
    remaining = context.time_remaining()
    if (remaining is not None and remaining <= 0) or not context.is_active():
        raise P4RuntimeError(Code.DEADLINE_EXCEEDED,
                             "the request's deadline passed before it could be applied; nothing was written")


class P4RuntimeService(p4runtime_pb2_grpc.P4RuntimeServicer):
    """P4Runtime RPCs on one SwitchTarget (device id = target.device_id)."""

    def __init__(self, target: SwitchTarget, stream_limit: int = DEFAULT_STREAM_LIMIT) -> None:
        self.target = target
        self.device_id = target.device_id
        self._control = threading.RLock()  # serializes Write/Read/SetForwardingPipelineConfig
        # Writes waiting for the control lock: a long Read steps aside for them between batches
        # (a plain lock would let the Read thread take it straight back)
        self._waiting_writes = 0
        self._writes_done = threading.Condition()
        self.arbitration = Arbitration(target.device_id, lambda s, msg: s.send(msg))
        self.admission = StreamAdmission(self.arbitration.standing, limit=stream_limit)
        self.digests = DigestDispatcher(self._to_primaries)
        self.configs = PipelineConfigs(target)
        self._entities: Entities | None = None
        self._handler = StreamHandler(self.arbitration, self._packet_out, self.digests.ack)
        target.set_packet_in_listener(self._on_packet_in)
        target.set_digest_listener(self.digests.on_digest)

    @property
    def open_streams(self) -> int:
        """Number of StreamChannel RPCs currently open."""
        return len(self.admission)

    # -- helpers -------------------------------------------------------------------------
    def _check_device(self, device_id: int) -> None:
        if device_id != self.device_id:
            raise P4RuntimeError(Code.NOT_FOUND, f"unknown device id {device_id} (this is {self.device_id})")

    def _check_primary(self, req) -> None:
        if not self.arbitration.may_write(req.role, election_id_of(req)):
            raise P4RuntimeError(Code.PERMISSION_DENIED,
                                 "not the primary client of this role (election id does not match)")

    def _current(self) -> Entities:
        """Entity handlers of the running pipeline (rebuilt if another front door swapped it)."""
        engine = self.target.engine
        ent = self._entities
        if ent is not None and ent.state.engine is engine:
            return ent
        if engine is None or self.target.p4info is None:
            raise P4RuntimeError(Code.FAILED_PRECONDITION, "no forwarding pipeline config is set")
        self._on_commit(PipelineState(Translator(self.target.p4info, engine), engine))
        return self._entities  # type: ignore[return-value]

    def _on_commit(self, state: PipelineState) -> None:
        self._entities = Entities(state, self.digests)
        self.digests.reset(state.translator)

    @staticmethod
    def _run(context, fn: Callable):
        try:
            return fn()
        except Exception as exc:
            err = as_p4runtime_error(exc)
        context.abort(err.code, err.message)

    def _to_primaries(self, msg: p4runtime_pb2.StreamMessageResponse) -> None:
        for stream in self.arbitration.primaries():
            stream.send(msg)

    def _packet_out(self, msg: p4runtime_pb2.PacketOut) -> None:
        ent = self._entities
        header = ent.state.translator.controller_headers.get("packet_out") if ent is not None else None
        self.target.packet_out(frame_from_packet_out(header, msg))

    def _on_packet_in(self, frame: bytes) -> None:
        ent = self._entities
        header = ent.state.translator.controller_headers.get("packet_in") if ent is not None else None
        try:
            pkt = packet_in_from_frame(header, frame)
        except ValueError:
            return  # too short for the packet_in header: BMv2 would not deliver it either
        self._to_primaries(p4runtime_pb2.StreamMessageResponse(packet=pkt))

    # -- RPCs ----------------------------------------------------------------------------
    def Capabilities(self, request, context):
        return p4runtime_pb2.CapabilitiesResponse(p4runtime_api_version=_api_version())

    def SetForwardingPipelineConfig(self, request, context):
        def run():
            self._check_device(request.device_id)
            if not self.arbitration.is_primary(request.role, election_id_of(request)):
                raise P4RuntimeError(Code.PERMISSION_DENIED, "SetForwardingPipelineConfig needs the election id "
                                     "of this role's primary client (arbitrate on a StreamChannel first)")
            with self._control:
                try:  # the running state, for RECONCILE_AND_COMMIT
                    current: PipelineState | None = self._current().state
                except P4RuntimeError:
                    current = None  # nothing usable is running: a plain commit
                self.configs.set(request, current, self._on_commit)
            return p4runtime_pb2.SetForwardingPipelineConfigResponse()
        return self._run(context, run)

    def GetForwardingPipelineConfig(self, request, context):
        def run():
            self._check_device(request.device_id)
            with self._control:
                return p4runtime_pb2.GetForwardingPipelineConfigResponse(config=self.configs.get(request))
        return self._run(context, run)

    def Write(self, request, context):
        def run():
            self._check_device(request.device_id)
            self._check_primary(request)
            with self._writes_done:
                self._waiting_writes += 1
            try:
                with self._control:
                    _check_deadline(context)  # the lock may have been held past the client's deadline
                    ent = self._current()
                    return write_batch(ent, self.target.bmv2_json, request.updates, request.atomicity,
                                       self.target.lock)
            finally:
                with self._writes_done:
                    self._waiting_writes -= 1
                    self._writes_done.notify_all()
        errors = self._run(context, run)
        if any(e is not None for e in errors):
            status = fit_batch_status(batch_status(errors), MAX_METADATA_BYTES // 2)
            context.abort_with_status(_Status(Code.UNKNOWN, status.message,
                                              (("grpc-status-details-bin", status.SerializeToString()),)))
        return p4runtime_pb2.WriteResponse()

    def Read(self, request, context) -> Iterator[p4runtime_pb2.ReadResponse]:
        def run():
            self._check_device(request.device_id)
            with self._control:
                ent = self._current()
                selections = [iter(ent.read(e)) for e in request.entities]
            found = []
            for entities in selections:
                more = True
                while more:
                    # a batch at a time under the control lock, then let Writes in: a long
                    # wildcard Read never holds a writer past its deadline
                    with self._control:
                        if self.target.engine is not ent.state.engine:
                            raise P4RuntimeError(Code.ABORTED, "the forwarding pipeline changed during the Read")
                        for _ in range(READ_LOCK_BATCH):
                            with self.target.lock:  # per entity: a long Read does not stall packets
                                item = next(entities, None)
                            if item is None:
                                more = False
                                break
                            found.append(item)
                    if not context.is_active():
                        raise P4RuntimeError(Code.CANCELLED, "the client went away")
                    with self._writes_done:  # let waiting Writes in before the next batch
                        self._writes_done.wait_for(lambda: self._waiting_writes == 0, timeout=WRITE_TURN_S)
            return found
        found = self._run(context, run)
        for i in range(0, max(len(found), 1), READ_CHUNK):
            yield p4runtime_pb2.ReadResponse(entities=found[i:i + READ_CHUNK])

    def StreamChannel(self, request_iterator, context):
        stream = Stream(context.peer())
        try:
            evicted = self.admission.admit(stream, peer_identity(context))
        except P4RuntimeError as exc:
            context.abort(exc.code, exc.message)
        if evicted is not None:
            evicted.finish(eviction_error(self.admission.limit))
        context.add_callback(stream.finish)
        reader = threading.Thread(target=self._handler.serve, args=(stream, request_iterator),
                                  name="p4rt-stream", daemon=True)
        reader.start()
        try:
            for item in stream.responses():
                if isinstance(item, _End):
                    if item.error is not None:
                        context.abort(item.error.code, item.error.message)
                    return
                yield item
        finally:
            self.arbitration.remove(stream)
            self.admission.release(stream)

    def close(self) -> None:
        """End every stream, stop digest delivery, detach from the target."""
        self.target.set_packet_in_listener(None)
        self.target.set_digest_listener(None)
        for s in self.admission.streams():
            s.finish()
        self.digests.stop()


def peer_identity(context) -> str:
    """Who a client is, for the per-peer stream cap: its certificate's common name on a channel
    with client authentication, else its address without the port."""
    try:
        names = context.auth_context().get("x509_common_name") or []
    except Exception:  # pragma: no cover - an insecure channel has an auth context too
        names = []
    if names:
        return "cn:" + b",".join(names).decode(errors="replace")
    peer = context.peer() or ""
    return peer.rpartition(":")[0] if peer.count(":") >= 2 else peer


class P4RuntimeServer:
    """A running P4Runtime gRPC server; `port` is the bound TCP port."""

    def __init__(self, target: SwitchTarget, addr: str, max_workers: int = DEFAULT_WORKERS,
                 stream_limit: int | None = None, tls: TlsFiles | None = None) -> None:
        # open streams hold a worker each: at most half the pool, the rest is kept for unary calls
        limit = stream_limit if stream_limit is not None else max(1, min(DEFAULT_STREAM_LIMIT, max_workers // 2))
        if limit >= max_workers:
            raise ValueError("the stream limit must leave workers for unary RPCs")
        self.service = P4RuntimeService(target, stream_limit=limit)
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="p4rt"),
                                   options=[("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
                                            ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
                                            ("grpc.max_metadata_size", MAX_METADATA_BYTES),
                                            ("grpc.absolute_max_metadata_size", MAX_METADATA_BYTES),
                                            ("grpc.so_reuseport", 0)])
        p4runtime_pb2_grpc.add_P4RuntimeServicer_to_server(self.service, self._server)
        try:
            credentials = _server_credentials(tls) if tls is not None else None
            if credentials is None:
                self.port = self._server.add_insecure_port(addr)
            else:
                self.port = self._server.add_secure_port(addr, credentials)
        except ListenError:
            self.service.close()
            raise
        except RuntimeError as exc:
            self.service.close()
            raise ListenError(f"P4Runtime server cannot listen on {addr}: {exc}") from None
        if not self.port:
            self.service.close()
            raise ListenError(f"P4Runtime server cannot listen on {addr}")
        self._server.start()

    def stop(self, grace: float = 0.5) -> None:
        """Close all streams and stop serving (idempotent)."""
        self.service.close()
        self._server.stop(grace).wait()


def _read_pem(flag: str, path: str) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as exc:
        raise ListenError(f"cannot read {flag} '{path}': {exc.strerror}") from None


def _server_credentials(tls: TlsFiles) -> grpc.ServerCredentials:
    """TLS credentials from simple_switch_grpc's --grpc-server-{cert,key,cacert} files."""
    pair = (_read_pem("--grpc-server-key", tls.key), _read_pem("--grpc-server-cert", tls.cert))
    ca = _read_pem("--grpc-server-cacert", tls.cacert) if tls.cacert else None
    if tls.with_client_auth and ca is None:
        raise ListenError("--grpc-server-with-client-auth needs --grpc-server-cacert to verify clients against")
    return grpc.ssl_server_credentials([pair], root_certificates=ca, require_client_auth=tls.with_client_auth)


def start_p4runtime_server(target: SwitchTarget, addr: str, tls: TlsFiles | None = None) -> P4RuntimeServer:
    """Serve P4Runtime for `target` on `addr` (host:port; port 0 picks a free one), over TLS
    when `tls` is given."""
    return P4RuntimeServer(target, addr, tls=tls)
