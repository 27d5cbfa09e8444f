"""The run's supervisor: a switch or the controller that exits unexpectedly is started again.

A thread polls the switch processes and the controller daemon of a `RunSession`. When one has
exited (and the run is not stopping), it is restarted with the same flags after a backoff that
doubles with the restarts of the last minute, at most `restart_limit` times per process within
a minute (a process that keeps dying at start-up is left down; one killed now and then is
always restarted). Every
crash, restart and recovery is a line in `logs/supervisor.log` and a `Fault` in `faults`.

Recovery is what the rest of the run sees: a switch is recovered when the controller logs that
it re-programmed it (the controller's own figure from stream lost to programmed is kept), the
controller when its restarted daemon logs that every switch is programmed (it serves gradctl and
the agents again).
"""
from __future__ import annotations

import re
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

from topo import agents
from topo.processes import ManagedProcess
from topo.switch_node import P4Switch

RESTART_LIMIT = 5
FIRST_BACKOFF_S = 0.5
MAX_BACKOFF_S = 8.0
BACKOFF_WINDOW_S = 60.0
POLL_S = 0.1
# the running controller re-programmed it / a controller started since found it and programmed it
_SWITCH_PROGRAMMED = (r"^.*\b{name}: (?:reconnected, pipeline and state restored"
                      r"(?:; programmed ([0-9.]+) s after)?|up \(pipeline loaded)")


@dataclass
class Fault:
    """One unexpected exit of a supervised process and what followed."""

    name: str
    kind: str                          # switch | controller
    exit_code: int | None
    crashed_at: float                  # unix time the exit was seen
    restart: int                       # 1 for the first restart of this process
    restarted_after_s: float | None = None
    recovered_s: float | None = None   # crash seen -> programmed (switch) / serving (controller)
    gave_up: bool = False

    def as_dict(self) -> dict[str, Any]:
        """The JSON form (summaries, tests)."""
        return asdict(self)


class _Target:
    """One supervised process: how to see it exit, restart it, and see it recovered."""

    def __init__(self, name: str, kind: str, exit_code: Callable[[], int | None],
                 restart: Callable[[], None], recovered: Callable[[int], float | None]) -> None:
        self.name = name
        self.kind = kind
        self.exit_code = exit_code
        self.restart = restart
        self.recovered = recovered   # (log offset at the crash) -> seconds, or None while not yet
        self.restarts: list[float] = []   # monotonic times
        self.gave_up = False


class Supervisor:
    """Restarts the run's switches and controller; see the module docstring."""

    def __init__(self, switches: list[P4Switch], controller: ManagedProcess | None, log: Path,
                 restart_limit: int = RESTART_LIMIT) -> None:
        self.log_path = log
        self.restart_limit = restart_limit
        self.controller = controller
        self.faults: list[Fault] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._targets = [self._switch_target(sw) for sw in switches]
        if controller is not None:
            self._targets.append(self._controller_target(controller))
        # target -> (fault, monotonic crash time, restart due at, controller-log offset)
        self._pending: dict[str, tuple[Fault, float, float, int]] = {}
        self._recovering: dict[str, tuple[Fault, float, int]] = {}

    # -- targets -----------------------------------------------------------------------------
    def _controller_log_size(self) -> int:
        if self.controller is None:
            return 0
        try:
            return self.controller.log.stat().st_size
        except OSError:
            return 0

    def _controller_log_since(self, offset: int) -> str:
        if self.controller is None:
            return ""
        try:
            with open(self.controller.log, "rb") as fh:
                fh.seek(offset)
                return fh.read().decode(errors="replace")
        except OSError:
            return ""

    def _switch_target(self, node: P4Switch) -> _Target:
        pattern = re.compile(_SWITCH_PROGRAMMED.format(name=re.escape(node.name)), re.MULTILINE)

        def recovered(offset: int) -> float | None:
            match = pattern.search(self._controller_log_since(offset))
            if match is None:
                return None
            return float(match.group(1)) if match.group(1) is not None else -1.0

        return _Target(node.name, "switch", node.exit_code, node.restart, recovered)

    def _controller_target(self, proc: ManagedProcess) -> _Target:
        ready = re.compile(agents.CONTROLLER_READY, re.MULTILINE)

        def recovered(offset: int) -> float | None:
            return -1.0 if ready.search(self._controller_log_since(offset)) else None

        return _Target(proc.name, "controller", proc.returncode, lambda: _restart(proc), recovered)

    # -- life --------------------------------------------------------------------------------
    def start(self) -> "Supervisor":
        """Start watching (a daemon thread)."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._note(f"supervising {', '.join(t.name for t in self._targets)} "
                   f"(restart limit {self.restart_limit}, backoff {FIRST_BACKOFF_S:g}..{MAX_BACKOFF_S:g} s)")
        self._thread = threading.Thread(target=self._loop, name="supervisor", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop watching (before the run stops what it supervises). Idempotent."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)
            self._thread = None

    def snapshot(self) -> list[dict[str, Any]]:
        """Every fault so far, as dicts."""
        with self._lock:
            return [f.as_dict() for f in self.faults]

    def wait_recovered(self, faults: int, timeout: float) -> bool:
        """Block until at least `faults` faults were seen and none has a restart or recovery
        outstanding (True), or `timeout` s pass (False)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            with self._lock:
                if len(self.faults) >= faults and not self._pending and not self._recovering:
                    return True
            time.sleep(POLL_S)
        return False

    def _note(self, line: str) -> None:
        with open(self.log_path, "a") as out:
            out.write(f"{time.strftime('%H:%M:%S')} {line}\n")

    def _loop(self) -> None:
        while not self._stop.wait(POLL_S):
            now = time.monotonic()
            for target in self._targets:
                try:
                    self._step(target, now)
                except Exception as exc:  # noqa: BLE001 - one bad restart must not end supervision
                    self._note(f"{target.name}: supervisor error: {exc}")

    def _step(self, target: _Target, now: float) -> None:
        if target.gave_up:
            return
        pending = self._pending.get(target.name)
        if pending is not None:
            fault, crashed, due, offset = pending
            if now >= due:
                target.restart()
                fault.restarted_after_s = round(time.monotonic() - crashed, 3)
                with self._lock:
                    del self._pending[target.name]
                    self._recovering[target.name] = (fault, crashed, offset)
                self._note(f"{target.name}: restarted with the same flags "
                           f"({fault.restarted_after_s} s after the exit; restart {fault.restart})")
            return
        recovering = self._recovering.get(target.name)
        if recovering is not None:
            fault, crashed, offset = recovering
            if target.exit_code() is None:
                figure = target.recovered(offset)
                if figure is not None:
                    seen = round(now - crashed, 3)
                    # the controller measures a switch from its stream loss, nearer the crash
                    fault.recovered_s = figure if figure >= 0 else seen
                    with self._lock:
                        del self._recovering[target.name]
                    state = "programmed" if target.kind == "switch" else "serving (all switches programmed)"
                    self._note(f"{target.name}: {state} {fault.recovered_s} s after the crash")
                return
            with self._lock:   # died again before it recovered: a new fault below
                del self._recovering[target.name]
        code = target.exit_code()
        if code is None:
            return
        target.restarts = [t for t in target.restarts if now - t < BACKOFF_WINDOW_S]
        count = sum(1 for f in self.faults if f.name == target.name) + 1
        fault = Fault(target.name, target.kind, code, round(time.time(), 3), count)
        with self._lock:
            self.faults.append(fault)
        if len(target.restarts) >= self.restart_limit:
            target.gave_up = fault.gave_up = True
            self._note(f"{target.name}: exited with code {code}; not restarted: it reached the "
                       f"restart limit ({self.restart_limit} in {BACKOFF_WINDOW_S:g} s)")
            return
        delay = min(FIRST_BACKOFF_S * 2 ** len(target.restarts), MAX_BACKOFF_S)
        target.restarts.append(now)
        with self._lock:
            self._pending[target.name] = (fault, now, now + delay, self._controller_log_size())
        self._note(f"{target.name} ({target.kind}) exited unexpectedly with code {code}; "
                   f"restarting in {delay:g} s")


def _restart(proc: ManagedProcess) -> None:
    proc.restart()
