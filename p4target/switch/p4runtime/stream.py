"""One StreamChannel: its outgoing message queue and the handling of incoming messages
(arbitration, packet-out, digest acks)."""
from __future__ import annotations

import queue
import threading
from typing import Callable, Iterator

from p4.v1 import p4runtime_pb2

from .arbitration import Arbitration
from .errors import Code, P4RuntimeError, as_p4runtime_error, canonical_code

_MAX_QUEUED = 10000  # messages a slow client may lag behind before packet-ins are dropped


class _End:
    def __init__(self, error: P4RuntimeError | None) -> None:
        self.error = error


class Stream:
    """A client's StreamChannel: `send` queues a response, `finish` ends the RPC."""

    def __init__(self, peer: str) -> None:
        self.peer = peer
        self._out: queue.Queue = queue.Queue()
        self._done = threading.Event()

    def send(self, msg: p4runtime_pb2.StreamMessageResponse) -> None:
        if not self._done.is_set() and self._out.qsize() < _MAX_QUEUED:
            self._out.put(msg)

    def finish(self, error: P4RuntimeError | None = None) -> None:
        if not self._done.is_set():
            self._done.set()
            self._out.put(_End(error))

    def responses(self) -> Iterator[p4runtime_pb2.StreamMessageResponse | _End]:
        """Queued responses, ending with the _End marker."""
        while True:
            item = self._out.get()
            yield item
            if isinstance(item, _End):
                return


def stream_error(exc: P4RuntimeError, **details) -> p4runtime_pb2.StreamMessageResponse:
    resp = p4runtime_pb2.StreamMessageResponse()
    resp.error.canonical_code = canonical_code(exc.code)
    resp.error.message = exc.message
    for key, value in details.items():
        getattr(resp.error, key).CopyFrom(value)
    return resp


class StreamHandler:
    """Reads one stream's requests until the client closes it or a fatal error."""

    def __init__(self, arbitration: Arbitration, packet_out: Callable[[p4runtime_pb2.PacketOut], None],
                 digest_ack: Callable[[p4runtime_pb2.DigestListAck], None]) -> None:
        self.arbitration = arbitration
        self.packet_out = packet_out
        self.digest_ack = digest_ack

    def serve(self, stream: Stream, requests: Iterator[p4runtime_pb2.StreamMessageRequest]) -> None:
        error: P4RuntimeError | None = None
        try:
            for msg in requests:
                error = self._handle(stream, msg)
                if error is not None:
                    break
        except Exception:  # the client went away (cancelled RPC, broken connection)
            pass
        finally:
            self.arbitration.remove(stream)
            stream.finish(error)

    def _handle(self, stream: Stream, msg: p4runtime_pb2.StreamMessageRequest) -> P4RuntimeError | None:
        kind = msg.WhichOneof("update")
        if kind == "arbitration":
            try:
                self.arbitration.update(stream, msg.arbitration)
            except P4RuntimeError as exc:
                return exc  # fatal for the stream
            return None
        if kind == "packet":
            try:
                if not self.arbitration.is_primary_stream(stream):
                    raise P4RuntimeError(Code.PERMISSION_DENIED, "only the primary client may send packets")
                self.packet_out(msg.packet)
            except Exception as exc:
                stream.send(stream_error(as_p4runtime_error(exc),
                                         packet_out=p4runtime_pb2.PacketOutError(packet_out=msg.packet)))
            return None
        if kind == "digest_ack":
            if self.arbitration.is_primary_stream(stream):
                self.digest_ack(msg.digest_ack)
            return None
        stream.send(stream_error(P4RuntimeError(Code.UNIMPLEMENTED, f"stream message '{kind}' is not supported")))
        return None
