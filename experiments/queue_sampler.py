"""Queue length over time: samples egress queue depths of running switches through Thrift.

The program's egress writes each queue's depth at dequeue (`deq_qdepth`, packets) into the
top-level register `qdepth_reg[port * 8 + priority]` (p4src/registers.p4). A background thread
reads it over one persistent Thrift connection per switch (the `standard` service BMv2 and the
embedded target serve), so a sample costs a round trip, not a CLI start. Read-only: it never
changes switch state. A queue that sends nothing keeps its last value, so the samples show the
queue as the last packet through it left it.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from bm_runtime.standard import Standard
from thrift.protocol import TBinaryProtocol, TMultiplexedProtocol
from thrift.transport import TSocket, TTransport

QDEPTH_REGISTER = "qdepth_reg"
PRIORITIES = 8


class SamplerError(Exception):
    """The switch's Thrift port cannot be read."""


@dataclass(frozen=True)
class QueueRef:
    """One egress queue: a label, the switch's Thrift port, egress port and priority."""

    label: str
    thrift_port: int
    port: int
    priority: int = 0

    @property
    def index(self) -> int:
        return self.port * PRIORITIES + self.priority


@dataclass
class QueueSampler:
    """Samples every queue in `queues` each `interval` seconds from a thread, between start()
    and stop(); `samples` holds (unix time, label, depth) tuples."""

    queues: list[QueueRef]
    interval: float = 0.01
    host: str = "127.0.0.1"
    samples: list[tuple[float, str, int]] = field(default_factory=list)
    errors: int = 0

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._clients: dict[int, tuple[TTransport.TTransportBase, Standard.Client]] = {}

    def _client(self, port: int) -> Standard.Client:
        if port not in self._clients:
            transport = TTransport.TBufferedTransport(TSocket.TSocket(self.host, port))
            protocol = TMultiplexedProtocol.TMultiplexedProtocol(
                TBinaryProtocol.TBinaryProtocol(transport), "standard")
            try:
                transport.open()
            except TTransport.TTransportException as exc:
                raise SamplerError(f"Thrift port {port}: {exc}") from None
            self._clients[port] = (transport, Standard.Client(protocol))
        return self._clients[port][1]

    def read(self, queue: QueueRef) -> int:
        """One depth reading of `queue` (packets)."""
        return int(self._client(queue.thrift_port).bm_register_read(0, QDEPTH_REGISTER, queue.index))

    def start(self) -> "QueueSampler":
        for q in self.queues:   # fail now, in the caller, when a switch cannot be read
            self.read(q)
        self._thread = threading.Thread(target=self._run, name="queue-sampler", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        next_at = time.monotonic()
        while not self._stop.is_set():
            now = time.time()
            for q in self.queues:
                try:
                    self.samples.append((now, q.label, self.read(q)))
                except Exception:  # noqa: BLE001 - a failed read is counted, sampling goes on
                    self.errors += 1
            next_at += self.interval
            self._stop.wait(max(0.0, next_at - time.monotonic()))

    def stop(self) -> list[tuple[float, str, int]]:
        """Stop sampling, close the connections, return the samples."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        for transport, _ in self._clients.values():
            transport.close()
        self._clients.clear()
        return self.samples

    def series(self, label: str, since: float = 0.0, until: float = float("inf")) -> list[tuple[float, int]]:
        """(time, depth) of one queue within [since, until]."""
        return [(t, d) for t, lab, d in self.samples if lab == label and since <= t <= until]
