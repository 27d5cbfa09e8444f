"""One P4Runtime connection to one switch: arbitration, pipeline, writes, reads, packet I/O.

A :class:`SwitchConnection` owns its gRPC channel and its StreamChannel; nothing is shared
between connections, so one process can hold any number of switches. Every RPC has a deadline;
every failure becomes a :mod:`controller.errors` type. Messages are the ``p4.v1`` protos
(:mod:`controller.entries` turns values into them).
"""
from __future__ import annotations

import json
import queue
import threading
import time
from typing import Callable, Iterable, Iterator, Sequence

import grpc
from google.rpc import code_pb2, status_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from controller import errors

ElectionId = tuple[int, int]
StreamLostCallback = Callable[["SwitchConnection"], None]

_STATUS_DETAILS_KEY = "grpc-status-details-bin"
# A large batch's per-update errors (one p4.v1.Error each, in the trailing metadata) exceed
# gRPC's default 8-16 KB metadata limit and would arrive as RESOURCE_EXHAUSTED instead.
MAX_METADATA_BYTES = 16 << 20
_CODE_NAMES = {v: k for k, v in code_pb2.Code.items()}


def election_id_int(eid: ElectionId) -> int:
    """An election id (high, low) as one integer for display and comparison."""
    return (eid[0] << 64) | eid[1]


def decode_write_error(err: grpc.RpcError, n_updates: int, switch: str) -> errors.SwitchError:
    """Turn a failed Write into a typed error; a batch failure carries one UpdateError each.

    P4Runtime puts a ``google.rpc.Status`` in the trailing metadata whose details are one
    ``p4.v1.Error`` per update, in request order (canonical_code 0 = that update was applied).
    """
    base = errors.from_grpc(err, switch, "Write")
    if not isinstance(base, errors.RpcError):
        return base
    status = None
    for key, value in (err.trailing_metadata() or ()):
        if key == _STATUS_DETAILS_KEY:
            status = status_pb2.Status()
            status.ParseFromString(value)
    updates: list[errors.UpdateError] = []
    if status is not None:
        for i, detail in enumerate(status.details):
            p4err = p4runtime_pb2.Error()
            if detail.Unpack(p4err):
                updates.append(errors.UpdateError(
                    i, _CODE_NAMES.get(p4err.canonical_code, str(p4err.canonical_code)),
                    " ".join(p4err.message.split())))
    failed = [u for u in updates if not u.ok]
    if failed:
        first = failed[0]
        message = (f"Write failed: {len(failed)} of {n_updates} updates rejected; "
                   f"update {first.index}: {first.code}" + (f": {first.message}" if first.message else ""))
        code = first.code
    else:
        message, code = base.message, base.code
    return errors.WriteError(message, switch, code, updates)


class _RequestQueue:
    """The request iterator of the StreamChannel; ``close()`` ends the stream cleanly."""

    _END = object()

    def __init__(self) -> None:
        self._q: "queue.Queue[object]" = queue.Queue()

    def put(self, msg: p4runtime_pb2.StreamMessageRequest) -> None:
        self._q.put(msg)

    def close(self) -> None:
        self._q.put(self._END)

    def __iter__(self) -> Iterator[p4runtime_pb2.StreamMessageRequest]:
        while True:
            item = self._q.get()
            if item is self._END:
                return
            yield item  # type: ignore[misc]


class SwitchConnection:
    """A P4Runtime client for one switch (one device id, one election id)."""

    def __init__(self, name: str, address: str, device_id: int,
                 election_id: ElectionId = (0, 1), timeout: float = 5.0,
                 on_stream_lost: StreamLostCallback | None = None,
                 on_primary_regained: StreamLostCallback | None = None,
                 credentials: grpc.ChannelCredentials | None = None) -> None:
        """`credentials`: TLS channel credentials (controller.tls, the run's client certificate);
        None: a plaintext channel, for switches started without TLS."""
        self.name = name
        self.credentials = credentials
        self.address = address
        self.device_id = device_id
        self.election_id = election_id
        self.timeout = timeout
        self.on_stream_lost = on_stream_lost
        self.on_primary_regained = on_primary_regained
        self.primary_election_id: ElectionId | None = None
        self._channel: grpc.Channel | None = None
        self._stub: p4runtime_pb2_grpc.P4RuntimeStub | None = None
        self._requests: _RequestQueue | None = None
        self._reader: threading.Thread | None = None
        self._arbitrated = threading.Event()
        self._is_primary = False
        self._closing = False
        self._stream_alive = False
        self._lock = threading.Lock()
        self.packets_in: "queue.Queue[p4runtime_pb2.PacketIn]" = queue.Queue(maxsize=10000)
        self.stream_errors: list[str] = []

    # -- connection ----------------------------------------------------------------------
    @property
    def connected(self) -> bool:
        """True while the stream channel is open."""
        return self._stream_alive

    @property
    def is_primary(self) -> bool:
        """True when the switch last told us we are the primary controller."""
        return self._stream_alive and self._is_primary

    def connect(self) -> bool:
        """Open the channel and the stream, send arbitration; returns whether we are primary.

        Raises UnreachableError when the switch does not answer within ``timeout``.
        """
        self.close()
        self._closing = False
        options = [
            ("grpc.max_send_message_length", 64 << 20),
            ("grpc.max_receive_message_length", 64 << 20),
            ("grpc.max_metadata_size", MAX_METADATA_BYTES),
            ("grpc.absolute_max_metadata_size", MAX_METADATA_BYTES),
        ]
        channel = grpc.secure_channel(self.address, self.credentials, options=options) \
            if self.credentials is not None else grpc.insecure_channel(self.address, options=options)
        try:
            grpc.channel_ready_future(channel).result(timeout=self.timeout)
        except grpc.FutureTimeoutError:
            channel.close()
            how = ("over TLS with the run's client certificate: is the switch started with this run's "
                   "certificates, or without TLS (then --plaintext)?" if self.credentials is not None else
                   "in plaintext: a switch started with TLS refuses it")
            raise errors.UnreachableError(
                f"no P4Runtime server at {self.address} (timed out after {self.timeout:g}s; tried {how})",
                self.name) from None
        self._channel = channel
        self._stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
        self._arbitrated.clear()
        self._requests = _RequestQueue()
        responses = self._stub.StreamChannel(iter(self._requests))
        self._stream_alive = True
        self._reader = threading.Thread(target=self._read_stream, args=(responses,),
                                        name=f"p4rt-stream-{self.name}", daemon=True)
        self._reader.start()
        self._send_arbitration()
        if not self._arbitrated.wait(self.timeout):
            self.close()
            raise errors.UnreachableError(
                f"no arbitration answer from {self.address} within {self.timeout:g}s", self.name)
        if not self._stream_alive:
            detail = self.stream_errors[-1] if self.stream_errors else "stream closed"
            self.close()
            raise errors.UnreachableError(f"stream channel failed: {detail}", self.name)
        return self._is_primary

    def _send_arbitration(self) -> None:
        req = p4runtime_pb2.StreamMessageRequest()
        req.arbitration.device_id = self.device_id
        req.arbitration.election_id.high = self.election_id[0]
        req.arbitration.election_id.low = self.election_id[1]
        assert self._requests is not None
        self._requests.put(req)

    def _read_stream(self, responses: Iterable[p4runtime_pb2.StreamMessageResponse]) -> None:
        try:
            for msg in responses:
                kind = msg.WhichOneof("update")
                if kind == "arbitration":
                    arb = msg.arbitration
                    self.primary_election_id = (arb.election_id.high, arb.election_id.low)
                    was_primary, first = self._is_primary, not self._arbitrated.is_set()
                    self._is_primary = arb.status.code == code_pb2.OK
                    self._arbitrated.set()
                    if self._is_primary and not was_primary and not first \
                            and self.on_primary_regained is not None:
                        # another controller wrote while we were backup: our owner re-syncs
                        self.on_primary_regained(self)
                elif kind == "packet":
                    try:
                        self.packets_in.put_nowait(msg.packet)
                    except queue.Full:
                        pass  # a slow consumer loses packet-ins, never blocks the stream
                elif kind == "error":
                    self.stream_errors.append(" ".join(msg.error.message.split()))
        except grpc.RpcError as exc:
            if not self._closing:
                self.stream_errors.append(str(errors.from_grpc(exc, None, "StreamChannel")))
        finally:
            self._stream_alive = False
            self._is_primary = False
            self._arbitrated.set()
            if not self._closing and self.on_stream_lost is not None:
                self.on_stream_lost(self)

    def close(self) -> None:
        """End the stream and the channel (idempotent)."""
        self._closing = True
        if self._requests is not None:
            self._requests.close()
        if self._channel is not None:
            self._channel.close()
        if self._reader is not None and self._reader is not threading.current_thread():
            self._reader.join(timeout=self.timeout)
        self._channel = self._stub = self._requests = self._reader = None
        self._stream_alive = False
        self._is_primary = False

    def __enter__(self) -> "SwitchConnection":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _require_stub(self) -> p4runtime_pb2_grpc.P4RuntimeStub:
        if self._stub is None:
            raise errors.UnreachableError("not connected", self.name)
        return self._stub

    def _require_primary(self, what: str) -> None:
        if not self.is_primary:
            primary = self.primary_election_id
            raise errors.NotPrimaryError(
                f"{what} refused: we are not the primary controller"
                + (f" (primary election id {election_id_int(primary)})" if primary else ""),
                self.name, election_id_int(primary) if primary else None)

    def _election(self, msg: p4runtime_pb2.WriteRequest | p4runtime_pb2.SetForwardingPipelineConfigRequest) -> None:
        msg.election_id.high = self.election_id[0]
        msg.election_id.low = self.election_id[1]

    # -- pipeline ------------------------------------------------------------------------
    def set_pipeline(self, p4info: p4info_pb2.P4Info, device_config: bytes | dict,
                     cookie: int = 0) -> None:
        """Push P4Info + BMv2 JSON (bytes, or a dict that is serialised) and commit it."""
        self._require_primary("SetForwardingPipelineConfig")
        if isinstance(device_config, dict):
            device_config = json.dumps(device_config).encode()
        req = p4runtime_pb2.SetForwardingPipelineConfigRequest(
            device_id=self.device_id,
            action=p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT)
        self._election(req)
        req.config.p4info.CopyFrom(p4info)
        req.config.p4_device_config = device_config
        req.config.cookie.cookie = cookie
        try:
            self._require_stub().SetForwardingPipelineConfig(req, timeout=max(self.timeout, 30.0))
        except ValueError:   # grpc: the channel was closed under us (close() from another thread)
            raise errors.UnreachableError("connection closed", self.name) from None
        except grpc.RpcError as exc:
            raise errors.from_grpc(exc, self.name, "SetForwardingPipelineConfig") from None

    def get_pipeline(self) -> tuple[p4info_pb2.P4Info, int] | None:
        """(P4Info, cookie) of the loaded pipeline, or None when none is loaded."""
        req = p4runtime_pb2.GetForwardingPipelineConfigRequest(
            device_id=self.device_id,
            response_type=p4runtime_pb2.GetForwardingPipelineConfigRequest.P4INFO_AND_COOKIE)
        try:
            resp = self._require_stub().GetForwardingPipelineConfig(req, timeout=self.timeout)
        except ValueError:
            raise errors.UnreachableError("connection closed", self.name) from None
        except grpc.RpcError as exc:
            err = errors.from_grpc(exc, self.name, "GetForwardingPipelineConfig")
            if isinstance(err, errors.PipelineError):
                return None
            raise err from None
        if not resp.config.HasField("p4info") or not resp.config.p4info.tables:
            return None
        return resp.config.p4info, resp.config.cookie.cookie

    # -- writes and reads ----------------------------------------------------------------
    def write(self, updates: Sequence[p4runtime_pb2.Update],
              atomicity: int = p4runtime_pb2.WriteRequest.CONTINUE_ON_ERROR) -> None:
        """Send one batch; raises WriteError listing each rejected update."""
        if not updates:
            return
        self._require_primary("Write")
        req = p4runtime_pb2.WriteRequest(device_id=self.device_id, atomicity=atomicity)
        self._election(req)
        req.updates.extend(updates)
        try:
            self._require_stub().Write(req, timeout=self.timeout)
        except ValueError:
            raise errors.UnreachableError("connection closed", self.name) from None
        except grpc.RpcError as exc:
            raise decode_write_error(exc, len(updates), self.name) from None

    def read(self, entities: Sequence[p4runtime_pb2.Entity]) -> list[p4runtime_pb2.Entity]:
        """Every entity matching the given (wildcard) entities, in the server's order."""
        req = p4runtime_pb2.ReadRequest(device_id=self.device_id)
        req.entities.extend(entities)
        out: list[p4runtime_pb2.Entity] = []
        try:
            for resp in self._require_stub().Read(req, timeout=self.timeout):
                out.extend(resp.entities)
        except ValueError:
            raise errors.UnreachableError("connection closed", self.name) from None
        except grpc.RpcError as exc:
            raise errors.from_grpc(exc, self.name, "Read") from None
        return out

    # -- packet I/O ----------------------------------------------------------------------
    def packet_out(self, payload: bytes, metadata: Sequence[tuple[int, bytes]] = ()) -> None:
        """Send a frame into the switch's CPU port (metadata: (id, value) pairs)."""
        self._require_primary("PacketOut")
        req = p4runtime_pb2.StreamMessageRequest()
        req.packet.payload = payload
        for mid, value in metadata:
            req.packet.metadata.add(metadata_id=mid, value=value)
        if self._requests is None:
            raise errors.UnreachableError("not connected", self.name)
        self._requests.put(req)

    def packet_in(self, timeout: float) -> p4runtime_pb2.PacketIn | None:
        """The next packet-in, or None after ``timeout`` seconds."""
        try:
            return self.packets_in.get(timeout=timeout)
        except queue.Empty:
            return None


def connect_with_backoff(conn: SwitchConnection, attempts: int, first_delay: float = 0.2,
                         max_delay: float = 5.0,
                         should_stop: Callable[[], bool] = lambda: False) -> bool:
    """Try ``conn.connect()`` up to ``attempts`` times with doubling delays; returns is_primary.

    Raises the last UnreachableError when every attempt failed.
    """
    delay = first_delay
    last: errors.ControllerError | None = None
    for i in range(max(1, attempts)):
        if should_stop():
            break
        try:
            return conn.connect()
        except errors.UnreachableError as exc:
            last = exc
        if i + 1 < attempts:
            time.sleep(delay)
            delay = min(delay * 2, max_delay)
    raise last or errors.UnreachableError("connection abandoned", conn.name)
