"""A port's egress rate over time: its base rate (`--port-rate`, or set at run time) capped by
the scheduled rate bursts of its impairment spec (`rateburst=START+DURATION@PPS`).

`PortRateSchedule` applies the effective rate to the traffic manager's port shaper
(`SwitchTarget.set_port_rate`) whenever it changes: at once for a new base rate or spec, and
at each burst edge from one timer thread. Queues therefore build in the traffic manager, and
the queue metadata the P4 program sees stays BMv2's.

Locking: the schedule shares the target's lock, so a control call that holds it (a Thrift
command) and the timer thread never take two locks in opposite orders.
"""
from __future__ import annotations

import threading
import time
from typing import Callable

from p4target.switch.links.impairments import RateBurst
from p4target.switch.target import SwitchTarget

# (absolute monotonic start, absolute end, pps)
_Window = tuple[float, float, float]


class PortRateSchedule:
    """Per-port base rates and rate bursts, applied to `target`'s port shapers on time."""

    def __init__(self, target: SwitchTarget, *, clock: Callable[[], float] = time.monotonic,
                 log: Callable[[str], None] | None = None) -> None:
        self._target = target
        self._clock = clock
        self._log = log
        self._cv = threading.Condition(target.lock)
        self._base: dict[int, float | None] = {}
        self._windows: dict[int, list[_Window]] = {}
        self._applied: dict[int, float | None] = {}
        self._running = False
        self._thread: threading.Thread | None = None

    def base_rate(self, port: int) -> float | None:
        """The port's rate outside bursts (None: unshaped)."""
        with self._cv:
            return self._base.get(port)

    def effective_rate(self, port: int) -> float | None:
        """The rate the port's shaper has now (None: unshaped)."""
        with self._cv:
            return self._rate_at(port, self._clock())

    def set_base_rate(self, port: int, pps: float | None) -> None:
        """Shape `port` to `pps` packets/s outside its bursts (None: unshaped)."""
        with self._cv:
            self._base[port] = pps
            self._update(port, self._clock())
            self._cv.notify_all()

    def set_bursts(self, port: int, bursts: tuple[RateBurst, ...], since: float | None = None) -> None:
        """Replace `port`'s rate bursts; their times count from `since` (monotonic, default now)."""
        with self._cv:
            now = self._clock()
            origin = now if since is None else since
            windows = [(origin + b.start, origin + b.start + b.duration, b.pps) for b in bursts]
            self._windows[port] = [w for w in windows if w[1] > now]
            self._update(port, now)
            self._cv.notify_all()

    def start(self) -> None:
        """Start the timer thread that applies burst edges (idempotent)."""
        with self._cv:
            if self._thread is not None:
                return
            self._running = True
            self._thread = threading.Thread(target=self._run, name="p4target-rates", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        """Stop the timer thread; rates stay as they are. Idempotent."""
        with self._cv:
            self._running = False
            self._cv.notify_all()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout=5)

    def _rate_at(self, port: int, now: float) -> float | None:
        rate = self._base.get(port)
        for start, end, pps in self._windows.get(port, ()):
            if start <= now < end:
                rate = pps if rate is None else min(rate, pps)
        return rate

    def _update(self, port: int, now: float) -> None:
        rate = self._rate_at(port, now)
        if port in self._applied and self._applied[port] == rate:
            return
        if port not in self._applied and rate is None:
            return  # never shaped: leave the traffic manager untouched
        self._applied[port] = rate
        self._target.set_port_rate(rate, port)
        if self._log is not None:
            self._log(f"port {port}: egress rate {'unshaped' if rate is None else f'{rate:g} packets/s'}")

    def _next_edge(self, now: float) -> float | None:
        edges = [t for windows in self._windows.values() for w in windows for t in w[:2] if t > now]
        return min(edges) if edges else None

    def _run(self) -> None:
        with self._cv:
            while self._running:
                now = self._clock()
                for port in list(self._windows):
                    self._update(port, now)
                    self._windows[port] = [w for w in self._windows[port] if w[1] > now]
                edge = self._next_edge(now)
                self._cv.wait(None if edge is None else max(edge - self._clock(), 0.0))
