"""Connection and arbitration: every switch reached as primary, and kept so.

:class:`Connections` opens one :class:`~controller.client.SwitchConnection` per switch of the
topology, brings them up in parallel, and hands each switch it is primary for to ``program``
(the desired-state sync). A switch whose stream drops is reconnected with backoff in the
background and programmed again; a switch on which another controller took mastership is left
alone (we stay backup and write nothing) until we are primary again, then re-synced.
"""
from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Sequence

from controller import errors
from controller.client import ElectionId, SwitchConnection
from controller.context import ControllerContext, ManagedSwitch
from controller.network import SwitchPlan
from controller.tls import ClientTls

DAEMON_ELECTION_ID: ElectionId = (0, 100)
DIRECT_ELECTION_ID: ElectionId = (0, 200)   # gradctl --direct outranks a (dead) daemon
RECONNECT_MAX_DELAY_S = 1.0

Program = Callable[[str, bool], object]   # (switch, push the pipeline?) -> brings it in step


class Connections:
    """One connection per switch of ``ctx.topology``, registered in ``ctx.switches``."""

    def __init__(self, ctx: ControllerContext, election_id: ElectionId, timeout: float, *,
                 program: Program, plan: Callable[[str], SwitchPlan], reconnect: bool = True,
                 tls: ClientTls | None = None) -> None:
        """`tls`: the run's client certificate (controller.tls) for every switch; None: plaintext."""
        self.ctx = ctx
        self.program = program
        self.reconnect_enabled = reconnect
        credentials = tls.credentials() if tls is not None else None
        for name, sw in ctx.topology.switches.items():
            conn = SwitchConnection(name, sw.grpc_addr, sw.device_id, election_id, timeout,
                                    on_stream_lost=self._on_stream_lost,
                                    on_primary_regained=self._on_primary_regained,
                                    credentials=credentials)
            ctx.switches[name] = ManagedSwitch(name, conn, plan(name))

    def bring_up_all(self, push_pipeline: bool, sync: bool) -> dict[str, str | None]:
        """Connect to every switch in parallel and bring each in step; returns name -> error."""
        switches = self.ctx.switches
        with ThreadPoolExecutor(max_workers=max(1, len(switches))) as pool:
            return dict(zip(switches, pool.map(
                lambda n: self.bring_up(n, push_pipeline, sync), switches)))

    def bring_up(self, name: str, push_pipeline: bool, sync: bool = True) -> str | None:
        """Connect to ``name`` as primary and program it (with ``sync``; else only check that
        a pipeline is loaded); the error, or None. Failures other than a lost election or a bad
        policy are retried in the background."""
        ms = self.ctx.switches[name]
        try:
            primary = ms.conn.connect()
            if not primary:
                raise errors.NotPrimaryError(
                    "another controller is primary; we stay backup and do not write", name)
            with self.ctx.lock:
                if sync:
                    self.program(name, push_pipeline)
                elif ms.conn.get_pipeline() is None:
                    raise errors.PipelineError("no pipeline loaded", name)
                else:
                    ms.pipeline_loaded = True
            ms.last_error = None
            self.ctx.log(f"{name}: up (pipeline loaded, state synced)")
            return None
        except errors.ControllerError as exc:
            ms.last_error = str(exc)
            self.ctx.log(f"{name}: {exc}")
            if not isinstance(exc, errors.NotPrimaryError) and self.reconnect_enabled \
                    and not isinstance(exc, (errors.P4NameError, errors.PolicyError)):
                self._schedule_reconnect(ms)
            return str(exc)

    def _on_stream_lost(self, conn: SwitchConnection) -> None:
        ms = self.ctx.switches.get(conn.name)
        if ms is None or self.ctx.stopping.is_set():
            return
        if ms.lost_at is None:
            ms.lost_at = time.monotonic()
        ms.last_error = "stream channel lost" + (f": {conn.stream_errors[-1]}" if conn.stream_errors else "")
        ms.pipeline_loaded = False
        self.ctx.log(f"{ms.name}: {ms.last_error}; reconnecting")
        if self.reconnect_enabled:
            self._schedule_reconnect(ms)

    def _on_primary_regained(self, conn: SwitchConnection) -> None:
        ms = self.ctx.switches.get(conn.name)
        if ms is None or self.ctx.stopping.is_set():
            return
        self.ctx.log(f"{ms.name}: primary again; re-syncing state")
        threading.Thread(target=self._resync, args=(ms,), daemon=True,
                         name=f"resync-{ms.name}").start()

    def _resync(self, ms: ManagedSwitch) -> None:
        if self.ctx.stopping.is_set():
            return
        try:
            with self.ctx.lock:
                self.program(ms.name, True)
            ms.last_error = None
        except errors.ControllerError as exc:
            ms.last_error = str(exc)
            self.ctx.log(f"{ms.name}: re-sync failed: {exc}")

    def _schedule_reconnect(self, ms: ManagedSwitch) -> None:
        if ms.reconnecting or self.ctx.stopping.is_set():
            return
        ms.reconnecting = True
        threading.Thread(target=self._reconnect_loop, args=(ms,), daemon=True,
                         name=f"reconnect-{ms.name}").start()

    def _reconnect_loop(self, ms: ManagedSwitch) -> None:
        stopping = self.ctx.stopping
        delay = 0.2
        try:
            while not stopping.is_set():
                if stopping.wait(delay):
                    return
                # a local switch being restarted is back within seconds: poll it often
                delay = min(delay * 2, RECONNECT_MAX_DELAY_S)
                try:
                    if not ms.conn.connect():
                        ms.last_error = "another controller is primary; we stay backup"
                        continue
                    with self.ctx.lock:
                        self.program(ms.name, True)
                    ms.last_error = None
                    ms.restarts += 1
                    since = ""
                    if ms.lost_at is not None:
                        ms.last_recovery_s = round(time.monotonic() - ms.lost_at, 3)
                        ms.lost_at = None
                        since = f"; programmed {ms.last_recovery_s} s after the stream was lost"
                    self.ctx.log(f"{ms.name}: reconnected, pipeline and state restored{since}")
                    return
                except errors.ControllerError as exc:
                    ms.last_error = str(exc)
        finally:
            ms.reconnecting = False

    def stop(self) -> None:
        """Close every connection; stop reconnecting."""
        self.ctx.stopping.set()
        for ms in self.ctx.switches.values():
            ms.conn.close()

    def wait_reachable(self, names: Sequence[str], timeout: float) -> bool:
        """Block until every switch in ``names`` is reachable again (for tests and scripts)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if all(n in self.ctx.reachable() for n in names):
                return True
            time.sleep(0.05)
        return False
