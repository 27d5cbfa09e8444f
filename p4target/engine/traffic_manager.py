"""Traffic manager: per egress port up to 8 strict-priority FIFO queues (BMv2-like).

`standard_metadata.priority` selects the queue; a priority >= the number of queues drops the
packet, as in BMv2. The higher the queue number, the earlier it is served. Each queue
has a capacity in packets (tail drop) and, as in BMv2, its own rate in packets/s: setting a
port's rate sets the rate of each of its queues. Two optional port shapers (extensions, off
by default) limit the port as a whole, with strict priority deciding who goes: one in packets
per second, one in bytes per second (a packet leaves while the byte bucket is not in debt and
then takes its length from it, so the long-run rate is exact for any packet size). BMv2 has
neither; its queue rates count packets only.
"""
from __future__ import annotations

import threading
from collections import deque
from typing import Any, Callable

DEFAULT_DEPTH = 64
BYTE_BURST = 1514   # bytes a byte-shaped port may save up while idle: one full Ethernet frame

# egress callback: (port, packet, enq_timestamp_us, enq_qdepth, deq_qdepth)
EgressCallback = Callable[[int, Any, float, int, int], None]


class _Queue:
    __slots__ = ("items", "depth", "pps", "tokens", "last_us")

    def __init__(self, depth: int) -> None:
        self.items: deque = deque()
        self.depth = depth
        self.pps: float | None = None
        self.tokens = 1.0
        self.last_us = 0.0

    def ready_at(self, now_us: float) -> float:
        """Microsecond time at which the head may leave (now if unlimited or tokens left)."""
        if self.pps is None:
            return now_us
        self.tokens = min(1.0, self.tokens + (now_us - self.last_us) * self.pps / 1e6)
        self.last_us = now_us
        if self.tokens >= 1.0 - 1e-9:
            return now_us
        return now_us + (1.0 - self.tokens) * 1e6 / self.pps if self.pps > 0 else float("inf")


class _ByteGate:
    """A port's shaper in bytes per second: a token bucket that may go into debt by one packet."""

    __slots__ = ("rate", "tokens", "last_us")

    def __init__(self, rate: float) -> None:
        self.rate = rate            # bytes per second
        self.tokens = float(BYTE_BURST)
        self.last_us: float | None = None

    def ready_at(self, now_us: float) -> float:
        """Microsecond time at which the port may send its next packet, whatever its size."""
        if self.last_us is not None:
            self.tokens = min(float(BYTE_BURST), self.tokens + (now_us - self.last_us) * self.rate / 1e6)
        self.last_us = now_us
        if self.tokens >= 0.0:
            return now_us
        return now_us - self.tokens * 1e6 / self.rate


class TrafficManager:
    """Egress queues for every port, a synchronous drain and a live scheduler.

    Live mode: whoever enqueues calls `serve(now)` right after (the engine does, on the packet's
    own thread), which sends every head its queue's rate lets go now; the scheduler thread only
    wakes for packets that must wait for their rate, so an unshaped port costs no thread
    hand-off. `serve` and the scheduler run under one lock (the engine's, given to `start`),
    so each port's packets leave in queue order.
    """

    def __init__(self, queues_per_port: int = 1, depth: int = DEFAULT_DEPTH,
                 size_of: Callable[[Any], int] = len) -> None:
        self.nq = queues_per_port
        self.size_of = size_of      # a queued packet's length in bytes (the byte shaper's cost)
        self.byte_gates: dict[int, _ByteGate] = {}
        self.default_depth = depth
        self.default_pps: float | None = None
        self.ports: dict[int, list[_Queue]] = {}
        self.shapers: dict[int, _Queue] = {}
        self.queued: dict[int, int] = {}  # packets waiting per port
        self.pending: set[int] = set()  # ports with queued packets
        self.overrides: dict[tuple[int | None, int | None], tuple[str, Any]] = {}
        self.drops = 0
        self._cv = threading.Condition(threading.RLock())
        self._thread: threading.Thread | None = None
        self._running = False
        self._egress: EgressCallback | None = None
        self._clock_us: Callable[[], float] | None = None
        self._wake_us = float("inf")  # when the scheduler thread next looks at the queues

    def _port(self, port: int) -> list[_Queue]:
        qs = self.ports.get(port)
        if qs is None:
            qs = [_Queue(self.default_depth) for _ in range(self.nq)]
            for q in qs:
                q.pps = self.default_pps
            self.ports[port] = qs
            self.queued[port] = 0
            shaper = self.shapers[port] = _Queue(0)
            for (p, pri), (what, value) in self.overrides.items():
                if p == port:
                    if what == "shaper":
                        shaper.pps = value
                        continue
                    for i, q in enumerate(qs):
                        if pri is None or pri == i:
                            setattr(q, what, value)
        return qs

    def _targets(self, port: int | None, priority: int | None) -> list[_Queue]:
        ports = [port] if port is not None else list(self.ports)
        out = []
        for p in ports:
            qs = self._port(p)
            out += qs if priority is None else [qs[priority]] if 0 <= priority < self.nq else []
        return out

    def set_rate(self, pps: float | None, port: int | None = None, priority: int | None = None) -> None:
        with self._cv:
            if port is None and priority is None:
                self.default_pps = pps
            elif port is not None:
                self.overrides[(port, priority)] = ("pps", pps)
            for q in self._targets(port, priority):
                q.pps = pps
            self._cv.notify_all()

    def set_port_rate(self, pps: float | None, port: int) -> None:
        """Shape a whole port to `pps` packets/s (None = off), shared by its queues."""
        with self._cv:
            self._port(port)
            self.shapers[port].pps = pps
            self.overrides[(port, "shaper")] = ("shaper", pps)
            self._cv.notify_all()

    def set_port_byte_rate(self, bytes_per_s: float | None, port: int) -> None:
        """Shape a whole port to `bytes_per_s` bytes/s (None = off), shared by its queues; it
        applies together with any packet-rate shaper of the port."""
        with self._cv:
            self._port(port)
            if bytes_per_s is None:
                self.byte_gates.pop(port, None)
            else:
                self.byte_gates[port] = _ByteGate(bytes_per_s)
            self._cv.notify_all()

    def port_byte_rate(self, port: int) -> float | None:
        """The port's byte rate in bytes/s (None: not shaped in bytes)."""
        gate = self.byte_gates.get(port)
        return None if gate is None else gate.rate

    def set_depth(self, depth: int, port: int | None = None, priority: int | None = None) -> None:
        with self._cv:
            if port is None:
                self.default_depth = depth
            else:
                self.overrides[(port, priority)] = ("depth", depth)
            for q in self._targets(port, priority):
                q.depth = depth

    def depth_of(self, port: int, priority: int = 0) -> int:
        """Packets now waiting in one queue."""
        return len(self._port(port)[priority].items)

    def enqueue(self, port: int, priority: int, packet: Any, now_us: float) -> bool:
        """Queue a packet; False when it is dropped (priority out of range or queue full).
        In live mode the caller then calls `serve` (or the packet waits for the scheduler)."""
        with self._cv:
            if not 0 <= priority < self.nq:
                self.drops += 1
                return False
            qs = self.ports.get(port)
            q = (qs if qs is not None else self._port(port))[priority]
            items = q.items
            n = len(items)
            if n >= q.depth:
                self.drops += 1
                return False
            items.append((packet, now_us, n))
            self.queued[port] += 1
            self.pending.add(port)
            return True

    def passes_through(self, port: int, priority: int) -> bool:
        """Whether a packet for (port, priority) would leave at once: live, the port and queue
        unshaped, nothing queued on the port, room in the queue. The caller then egresses it
        itself (with the lock held) instead of queueing it."""
        qs = self.ports.get(port)
        if qs is None or self.queued[port] or not self._running or not 0 <= priority < self.nq:
            return False
        q = qs[priority]
        return (q.pps is None and q.depth > 0 and self.shapers[port].pps is None
                and port not in self.byte_gates)

    def _pop(self, port: int, now_us: float, honour_rate: bool) -> tuple[Any, float, int, int] | None:
        qs = self.ports[port]
        shaper = self.shapers[port]
        if honour_rate and shaper.pps is not None and shaper.ready_at(now_us) > now_us:
            return None
        gate = self.byte_gates.get(port) if honour_rate else None
        if gate is not None and gate.ready_at(now_us) > now_us:
            return None
        for q in reversed(qs):
            if q.items:
                if honour_rate and q.pps is not None:
                    if q.ready_at(now_us) > now_us:
                        continue
                    q.tokens -= 1.0
                if honour_rate and shaper.pps is not None:
                    shaper.tokens -= 1.0
                packet, enq_us, enq_depth = q.items.popleft()
                if gate is not None:
                    gate.tokens -= self.size_of(packet)
                left = self.queued[port] - 1
                self.queued[port] = left
                if not left:
                    self.pending.discard(port)
                return packet, enq_us, enq_depth, len(q.items)
        return None

    def drain(self, egress: EgressCallback, clock_us: Callable[[], float]) -> None:
        """Synchronous mode: serve every queued packet now, strict priority, ignoring rates."""
        pending = self.pending
        while pending:
            for port in sorted(pending):
                while True:
                    item = self._pop(port, 0.0, False)
                    if item is None:
                        break
                    packet, enq_us, enq_depth, deq_depth = item
                    egress(port, packet, enq_us, enq_depth, deq_depth)

    # -- live mode ------------------------------------------------------------------------
    def start(self, egress: EgressCallback, clock_us: Callable[[], float],
              lock: threading.RLock | None = None) -> None:
        """Live mode: `serve()` and the scheduler thread send through `egress`, honouring rates
        and priorities; `lock` (default: the TM's own) is held while they do."""
        if self._thread is not None:
            return
        if lock is not None:
            self._cv = threading.Condition(lock)
        self._egress, self._clock_us = egress, clock_us
        self._running = True
        self._thread = threading.Thread(target=self._run, name="p4target-tm", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        with self._cv:
            self._running = False
            self._cv.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def serve(self) -> None:
        """Live mode: send every queued packet its rates let go now, strict priority per port;
        wake the scheduler if what is left falls due before it would look again."""
        egress = self._egress
        if egress is None or not self._running:
            return
        with self._cv:
            pending = self.pending
            clock = self._clock_us
            while pending:
                now = clock()
                sent = False
                for port in (tuple(pending) if len(pending) > 1 else (next(iter(pending)),)):
                    if port not in pending:
                        continue
                    item = self._pop(port, now, True)
                    if item is not None:
                        sent = True
                        egress(port, *item)
                if not sent:
                    if self._next_due(now) < self._wake_us:
                        self._cv.notify()
                    return

    def _next_due(self, now: float) -> float:
        """Earliest microsecond time at which a queued packet may leave (inf: none queued)."""
        due = float("inf")
        for port in self.pending:
            shaper = self.shapers[port]
            gate = shaper.ready_at(now) if shaper.pps is not None else now
            byte_gate = self.byte_gates.get(port)
            if byte_gate is not None:
                gate = max(gate, byte_gate.ready_at(now))
            for q in self.ports[port]:
                if q.items:
                    due = min(due, max(q.ready_at(now), gate))
        return due

    def _run(self) -> None:
        with self._cv:
            while self._running:
                self._wake_us = 0.0  # serving: an enqueue needs no wake-up
                self.serve()
                now = self._clock_us()
                due = self._next_due(now)
                self._wake_us = due
                if due == float("inf"):
                    self._cv.wait(0.5)
                else:
                    self._cv.wait(max(0.0, (due - now) / 1e6))
            self._wake_us = float("inf")
