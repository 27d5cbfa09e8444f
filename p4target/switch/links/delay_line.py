"""A delay line: frames handed in with a due time are sent by one thread when they fall due.

Used for link delay and jitter on egress ports (the kernel here has no netem). Frames are
kept in a heap ordered by due time (ties: arrival order), so jitter can reorder frames,
as netem's jitter does.
"""
from __future__ import annotations

import heapq
import itertools
import threading
import time
from typing import Callable

SendFunction = Callable[[int, bytes], None]


class DelayLine:
    """Heap-scheduled sender thread; `send(port, frame)` is called at each frame's due time."""

    def __init__(self, send: SendFunction, clock: Callable[[], float] = time.monotonic,
                 name: str = "p4target-delay") -> None:
        self._send = send
        self._clock = clock
        self._heap: list[tuple[float, int, int, bytes]] = []
        self._seq = itertools.count()
        self._cv = threading.Condition()
        self._running = False
        self._thread: threading.Thread | None = None
        self._name = name

    def start(self) -> None:
        """Start the sender thread (idempotent)."""
        with self._cv:
            if self._thread is not None:
                return
            self._running = True
            self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
            self._thread.start()

    def schedule(self, port: int, frame: bytes, hold: float) -> None:
        """Send `frame` on `port` `hold` seconds from now."""
        due = self._clock() + hold
        with self._cv:
            heapq.heappush(self._heap, (due, next(self._seq), port, frame))
            if self._heap[0][0] == due:
                self._cv.notify()

    def pending(self) -> int:
        """Frames waiting to be sent."""
        with self._cv:
            return len(self._heap)

    def stop(self) -> int:
        """Stop the thread; frames not yet due are discarded. Returns how many were discarded."""
        with self._cv:
            self._running = False
            discarded = len(self._heap)
            self._heap.clear()
            self._cv.notify_all()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout=5)
        return discarded

    def _run(self) -> None:
        while True:
            with self._cv:
                while self._running:
                    if not self._heap:
                        self._cv.wait()
                        continue
                    wait = self._heap[0][0] - self._clock()
                    if wait <= 0:
                        break
                    self._cv.wait(wait)
                if not self._running:
                    return
                due_now = []
                now = self._clock()
                while self._heap and self._heap[0][0] <= now:
                    _, _, port, frame = heapq.heappop(self._heap)
                    due_now.append((port, frame))
            for port, frame in due_now:
                self._send(port, frame)
