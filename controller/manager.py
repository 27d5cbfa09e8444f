"""The network controller: every switch of a topology, its pipeline, its state, the policy.

Architecture
------------
:class:`NetworkController` is the one object its users hold: the daemon (``daemon.py``, which
serves ``api.py`` on its socket), ``gradctl --direct`` and the tests. Beyond start-up (slot
assignment, then saving the state) it has no logic of its own: it builds six parts around one
shared :class:`~controller.context.ControllerContext` (the topology, the P4Runtime codec, the
:class:`~controller.state.ControllerState` that the state file keeps, the running jobs, one
lock, and the switches) and forwards each public method to the part that does the work:

``connections.py`` (:class:`Connections`)
    connection and arbitration: one P4Runtime connection per switch, brought up as primary in
    parallel; a dropped stream is reconnected with backoff in the background, a lost election
    leaves us backup (writing nothing) until we are primary again.
``desired.py`` (:class:`DesiredState`)
    desired-state sync: a switch's network plan plus the policy's entries; on every
    (re)connection the pipeline is checked by its cookie (pushed if it is not ours), queues are
    set, and only the difference to what the switch holds is written.
``applier.py`` (:class:`PolicyApplier`)
    policy application: a policy change as a diff on every reachable switch, atomic from the
    user's view (a failure on any switch rolls back the switches already changed), with the
    changed jobs' next policy epochs; a job's regime; a port's ECN/PCN thresholds.
``job_reports.py`` (:class:`JobReports`)
    jobs and reports: the hosts' view of a job's policy, and the PS's per-round reports that
    retire pending changes and carry the job's regime.
``adaptation.py`` (:class:`PcnAdaptation`)
    control laws: the PCN threshold law stepped on the switches' counters.
``statistics.py`` (:class:`Statistics`)
    statistics: per class, queue and port counters, and each switch's status.

How a change flows: an operator's policy (or a PS report, or a law step) reaches
:meth:`NetworkController.apply_policy`; the applier installs it on every switch through
``sync.py`` (dependency-ordered batches, rollback) and commits it to the shared state, which
is saved; a switch that was unreachable gets it from the desired-state sync when it comes back.
Parts that must hear of each other's events get a callable at construction, never a
reference to the controller: the sync tells the laws and job reports that a restarted switch's
counters are no baseline, the applier tells the law of a job whose PCN setting changed, and
the law and the reports install through ``apply_policy``.
"""
from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Sequence

from p4.config.v1 import p4info_pb2

from controller.adaptation import ADAPTATIONS_KEPT, PcnAdaptation
from controller.applier import PolicyApplier
from controller.client import ElectionId
from controller.connections import (DAEMON_ELECTION_ID, DIRECT_ELECTION_ID, RECONNECT_MAX_DELAY_S,
                                    Connections)
from controller.context import ControllerContext, Log, ManagedSwitch, load_state
from controller.desired import NETWORK_TABLES, POLICY_TABLES, DesiredState, pipeline_cookie
from controller.entries import Codec, Entity, TableEntry
from controller.job_reports import JobReports
from controller.network import NetworkOptions
from controller.p4info import P4Info
from controller.policy import JobState, Policy, RuleKey, SlotInfo, assign_slots
from controller.state import ControllerState
from controller.statistics import Statistics
from controller.tls import ClientTls
from controller.topology import Topology

__all__ = ["ADAPTATIONS_KEPT", "DAEMON_ELECTION_ID", "DIRECT_ELECTION_ID", "NETWORK_TABLES",
           "POLICY_TABLES", "RECONNECT_MAX_DELAY_S", "ControllerState", "ManagedSwitch",
           "NetworkController", "pipeline_cookie"]


class NetworkController:
    """Programs every switch of ``topology``; see the module docstring."""

    def __init__(self, topology: Topology, p4info: p4info_pb2.P4Info,
                 device_config: bytes | None, *, election_id: ElectionId = DAEMON_ELECTION_ID,
                 options: NetworkOptions = NetworkOptions(), timeout: float = 3.0,
                 state_file: Path | None = None, log: Log | None = None,
                 set_queues: bool = True, reconnect: bool = True, tls: ClientTls | None = None) -> None:
        self.topology = topology
        self.p4info_msg = p4info
        self.p4info = P4Info(p4info)
        self.codec = Codec(self.p4info)
        self.device_config = device_config
        self.options = options
        self.timeout = timeout
        self.state_file = state_file
        self.log = log or (lambda msg: None)
        self.set_queues = set_queues
        self.reconnect_enabled = reconnect
        loaded = load_state(state_file)
        self.state_loaded = loaded is not None
        self.ctx = ctx = ControllerContext(topology, self.codec, options,
                                           loaded or ControllerState(), state_file, self.log)
        self.state = ctx.state
        self.lock, self.settled, self.jobs = ctx.lock, ctx.settled, ctx.jobs
        self.switches = ctx.switches
        self.ready = threading.Event()   # set by the owner once start-up programming is done
        self.desired_state = DesiredState(ctx, p4info, device_config, set_queues=set_queues,
                                          on_counters_restarted=self._counters_restarted)
        self.cookie = self.desired_state.cookie
        self.laws = PcnAdaptation(ctx, apply_policy=self.apply_policy)
        self.applier = PolicyApplier(ctx, plan=self.desired_state.plan,
                                     on_pcn_setting_changed=self.laws.reset_law)
        self.reports = JobReports(ctx, apply_policy=self.apply_policy)
        self.statistics = Statistics(ctx)
        self.connections = Connections(ctx, election_id, timeout, reconnect=reconnect,
                                       program=self.desired_state.sync_switch,
                                       plan=self.desired_state.plan, tls=tls)

    def _counters_restarted(self) -> None:
        self.laws.forget_readings()
        self.reports.forget_readings()

    # -- desired state ---------------------------------------------------------------------
    def policy_entries(self, policy: Policy | None = None,
                       slots: dict[RuleKey, int] | None = None,
                       job_states: dict[int, JobState] | None = None) -> list[TableEntry]:
        """The policy's entries; see :meth:`DesiredState.policy_entries`."""
        return self.desired_state.policy_entries(policy, slots, job_states)

    def desired(self, name: str) -> list[Entity]:
        """Everything that should be installed on switch ``name``."""
        return self.desired_state.desired(name)

    def installed(self, name: str, tables: Sequence[str], profiles: Sequence[str] = ()) -> list[Entity]:
        """Entities of ``tables`` (and members/groups of ``profiles``) read from the switch."""
        return self.ctx.installed(name, tables, profiles)

    def slot_infos(self) -> list[SlotInfo]:
        """What each budget slot of the current policy stands for."""
        return self.state.slot_infos()

    # -- connections -----------------------------------------------------------------------
    def start(self, push_pipeline: bool = True, sync: bool = True) -> dict[str, str | None]:
        """Connect to every switch in parallel and bring each in step; returns name -> error.

        With ``sync=False`` nothing is written at start: the switches keep what they hold
        (a one-shot CLI acting on a running network), and only a loaded pipeline is checked.
        """
        self.state.slots = assign_slots(self.state.policy, self.state.slots)
        results = self.connections.bring_up_all(push_pipeline, sync)
        if sync:
            self.ctx.save_state()
        return results

    def stop(self) -> None:
        """Close every connection; stop reconnecting (and the control laws)."""
        self.connections.stop()

    def reachable(self) -> list[str]:
        """Switches we are primary for with the pipeline loaded and state synced."""
        return self.ctx.reachable()

    def wait_reachable(self, names: Sequence[str], timeout: float) -> bool:
        """Block until every switch in ``names`` is reachable again (for tests and scripts)."""
        return self.connections.wait_reachable(names, timeout)

    # -- policy ----------------------------------------------------------------------------
    def apply_policy(self, policy: Policy, job_states: dict[int, JobState] | None = None, *,
                     updates: dict[int, JobState] | None = None, cause: str = "operator",
                     force: bool = True, pcn_thresholds: dict[int, int] | None = None) -> dict[str, Any]:
        """Install ``policy`` on every reachable switch, all or nothing; see
        :meth:`PolicyApplier.apply_policy`."""
        return self.applier.apply_policy(policy, job_states, updates=updates, cause=cause,
                                         force=force, pcn_thresholds=pcn_thresholds)

    def check_priorities(self, policy: Policy) -> None:
        """Every rule's queue must exist on every switch (BMv2 drops priorities >= its queues)."""
        self.applier.check_priorities(policy)

    def set_job_state(self, job_id: int, round_: int | None, critical: bool) -> dict[str, Any]:
        """An operator sets a job's round/regime; re-applies phase-dependent bounds."""
        return self.applier.set_job_state(job_id, round_, critical)

    def set_pcn(self, switch: str, port: int, threshold: int | None = None,
                normal: int | None = None) -> dict[str, Any]:
        """Change one port's PCN (and optionally normal ECN) threshold."""
        return self.applier.set_pcn(switch, port, threshold, normal)

    # -- jobs ------------------------------------------------------------------------------
    def job_view(self, job_id: int, layers: int, *, fetch: bool = True) -> dict[str, Any]:
        """The host view of ``job_id`` for a model of ``layers`` layers (docs/contracts.md)."""
        return self.reports.job_view(job_id, layers, fetch=fetch)

    def job_report(self, job_id: int, layers: int, report: dict[str, Any]) -> dict[str, Any]:
        """A PS's report of one round; the job's view (see :meth:`JobReports.job_report`)."""
        return self.reports.job_report(job_id, layers, report)

    def jobs_status(self) -> list[dict[str, Any]]:
        """Every job that fetched its view or reported (`gradctl jobs`)."""
        return self.reports.jobs_status()

    def phase_status(self, job_id: int | None = None) -> list[dict[str, Any]]:
        """Per job of the policy: round, regime and who set it, and the phase bounds now."""
        return self.reports.phase_status(job_id)

    # -- control laws ----------------------------------------------------------------------
    def adapt_pcn(self) -> list[dict[str, Any]]:
        """One step of the PCN threshold law for every job whose law is on; the changes."""
        return self.laws.adapt()

    def start_adapting(self, interval: float) -> threading.Thread | None:
        """Run :meth:`adapt_pcn` every ``interval`` seconds until :meth:`stop` (0 = never)."""
        return self.laws.start(interval)

    def last_adaptation(self, job_id: int) -> dict[str, Any] | None:
        """The most recent recorded control-law change of ``job_id``."""
        return self.state.last_adaptation(job_id)

    def pcn_jobs(self) -> list[dict[str, Any]]:
        """Per job with a PCN setting: its threshold, law and PCN counts (`gradctl pcn jobs`)."""
        return self.laws.pcn_jobs()

    # -- statistics ------------------------------------------------------------------------
    def stats(self, switch: str | None = None) -> dict[str, Any]:
        """Per switch: per policy class seen/dropped/marked and loss vs bound; per queue counters."""
        return self.statistics.stats(switch)

    def pcn_table(self) -> list[dict[str, Any]]:
        """ECN/PCN thresholds and PCN counters per reachable switch port."""
        return self.statistics.pcn_table()

    def switch_status(self) -> list[dict[str, Any]]:
        """Per switch: connection and programming state (`gradctl switches`)."""
        return self.statistics.switch_status()
