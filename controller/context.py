"""What every part of the network controller shares: the switches, the state, one lock.

:class:`ControllerContext` is handed to each part of :class:`controller.manager.NetworkController`
(connections, desired-state sync, policy application, job reports, control laws, statistics).
It holds no logic of its own beyond the questions they all ask: which switches are reachable,
what a switch holds, what its counters read, and saving the state file.
"""
from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from p4.v1 import p4runtime_pb2

from controller.client import SwitchConnection
from controller.entries import Codec, Entity
from controller.jobs import JobTracker
from controller.network import NetworkOptions, SwitchPlan
from controller.state import ControllerState
from controller.statefile import read_state, write_state
from controller.topology import Topology

Log = Callable[[str], None]
Counter = tuple[str, int, int, int]   # counter name, index, packets, bytes


@dataclass
class ManagedSwitch:
    """One switch: its connection, its last error, its installed-by-us state."""

    name: str
    conn: SwitchConnection
    plan: SwitchPlan
    last_error: str | None = None
    pipeline_loaded: bool = False
    reconnecting: bool = False
    restarts: int = 0
    queues_set: bool = False
    lost_at: float | None = None          # monotonic time the stream dropped (a crash, usually)
    switch_restarts: int = 0              # reconnects that found the switch empty (it restarted)
    last_recovery_s: float | None = None  # stream lost -> pipeline and state back


def load_state(state_file: Path | None) -> ControllerState | None:
    """The state in ``state_file``; None when there is no file (or no path)."""
    # the state file is the truth after a restart: a corrupt one stops us (ConfigError)
    doc = read_state(state_file) if state_file is not None else None
    return None if doc is None else ControllerState.from_json(doc)


class ControllerContext:
    """The shared part of the controller; see the module docstring."""

    def __init__(self, topology: Topology, codec: Codec, options: NetworkOptions,
                 state: ControllerState, state_file: Path | None, log: Log) -> None:
        self.topology = topology
        self.codec = codec
        self.options = options
        self.state = state
        self.state_file = state_file
        self.log = log
        self.lock = threading.RLock()
        self.settled = threading.Condition(self.lock)   # notified on every job report
        self.stopping = threading.Event()
        self.jobs = JobTracker()
        self.switches: dict[str, ManagedSwitch] = {}    # filled by the connections

    def save_state(self) -> None:
        """Write the state file (when there is one)."""
        if self.state_file is not None:
            write_state(self.state_file, json.dumps(self.state.to_json(), indent=1))

    def reachable(self) -> list[str]:
        """Switches we are primary for with the pipeline loaded and state synced."""
        return [n for n, ms in self.switches.items() if ms.conn.is_primary and ms.pipeline_loaded]

    def installed(self, name: str, tables: Sequence[str], profiles: Sequence[str] = ()) -> list[Entity]:
        """Entities of ``tables`` (and members/groups of ``profiles``) read from the switch."""
        conn = self.switches[name].conn
        req = [self.codec.wildcard_table(t) for t in tables]
        for p in profiles:
            req.extend(self.codec.wildcard_profile(p))
        return [self.codec.decode(e) for e in conn.read(req)]

    def read_counters(self, name: str, requests: Sequence[p4runtime_pb2.Entity]) -> list[Counter]:
        """One Read of the counter cells ``requests`` on switch ``name``, decoded."""
        return list(map(self.codec.decode_counter, self.switches[name].conn.read(requests)))

    def counter_values(self, name: str, requests: Sequence[p4runtime_pb2.Entity]) -> dict[tuple[str, int], int]:
        """Packets per (counter, index) of one Read of ``requests`` on switch ``name``."""
        return {(c, i): pk for c, i, pk, _ in self.read_counters(name, requests)}
