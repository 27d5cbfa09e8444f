"""The network controller: every switch of a topology, its pipeline, its state, the policy.

:class:`NetworkController` holds one :class:`ManagedSwitch` per switch (a P4Runtime
connection, the codec of the pipeline, the switch's desired state) and keeps them in step with
the network plan and the policy. Policy changes are applied as a diff on every reachable switch
and are atomic from the user's view: a failure on any switch rolls back the switches already
changed. A switch whose stream drops is reconnected with backoff in the background and gets its
pipeline and state back.
"""
from __future__ import annotations

import hashlib
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from p4.config.v1 import p4info_pb2

from controller import errors
from controller import p4names as N
from controller.client import ElectionId, SwitchConnection
from controller.control_laws import PcnLawState, PcnObservation, pcn_step
from controller.entries import Codec, Entity, TableEntry
from controller.network import NetworkOptions, SwitchPlan, ecn_entry, plan_switch
from controller.p4info import P4Info
from controller.jobs import (CAUSES, SETTLE_TIMEOUT_S, JobRuntime, JobTracker, Pending,
                             wire_epoch)
from controller.policy import (JobState, Policy, PreviousGeneration, RuleKey, SlotInfo,
                               assign_slots, empty_policy, host_view, job_signature, parse_policy,
                               pcn_threshold, rule_key, slot_table, translate)
from controller.statefile import read_state, write_state
from controller.sync import Changes, Op, apply_changes, diff, rollback
from controller.thrift import run_commands
from controller.topology import Topology

DAEMON_ELECTION_ID: ElectionId = (0, 100)
DIRECT_ELECTION_ID: ElectionId = (0, 200)   # gradctl --direct outranks a (dead) daemon

Log = Callable[[str], None]

NETWORK_TABLES = (N.ARP_TABLE, N.ROUTE_TABLE, N.DSCP_TABLE, N.ECN_TABLE)
POLICY_TABLES = (N.CLASS_TABLE, N.JOB_FEATURES_TABLE, N.PCN_JOB_TABLE, N.DDL_FLOW_TABLE)
ADAPTATIONS_KEPT = 100   # the most recent control-law changes kept in the state file
RECONNECT_MAX_DELAY_S = 1.0


def pipeline_cookie(p4info: p4info_pb2.P4Info, device_config: bytes) -> int:
    """A 64-bit fingerprint of a pipeline, sent as its cookie to recognise it later."""
    h = hashlib.sha256(p4info.SerializeToString(deterministic=True) + device_config).digest()
    return int.from_bytes(h[:8], "big") >> 1


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


@dataclass
class ControllerState:
    """What must survive a controller restart: the policy, slot assignment, PCN overrides."""

    policy: Policy = field(default_factory=empty_policy)
    slots: dict[RuleKey, int] = field(default_factory=dict)
    job_states: dict[int, JobState] = field(default_factory=dict)
    ecn_overrides: dict[str, dict[int, tuple[int, int]]] = field(default_factory=dict)
    pcn_thresholds: dict[int, int] = field(default_factory=dict)   # adapted, per job
    adaptations: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The JSON form written to the state file."""
        return {
            "policy": dict(self.policy.document),
            "slots": [[list(k), v] for k, v in self.slots.items()],
            "job_states": {str(j): {"round": s.round, "critical": s.critical}
                           for j, s in self.job_states.items()},
            "ecn_overrides": {sw: {str(p): list(v) for p, v in ports.items()}
                              for sw, ports in self.ecn_overrides.items()},
            "pcn_thresholds": {str(j): v for j, v in self.pcn_thresholds.items()},
            "adaptations": self.adaptations,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "ControllerState":
        """Rebuild the state from its JSON form (the policy is revalidated)."""
        return cls(
            policy=parse_policy(data.get("policy") or {"jobs": []}, allow_empty=True),
            slots={tuple(k): int(v) for k, v in data.get("slots", [])},  # type: ignore[misc]
            job_states={int(j): JobState(s.get("round"), bool(s.get("critical")))
                        for j, s in data.get("job_states", {}).items()},
            ecn_overrides={sw: {int(p): (int(v[0]), int(v[1])) for p, v in ports.items()}
                           for sw, ports in data.get("ecn_overrides", {}).items()},
            pcn_thresholds={int(j): int(v) for j, v in data.get("pcn_thresholds", {}).items()},
            adaptations=[a for a in data.get("adaptations", []) if isinstance(a, dict)],
        )


class NetworkController:
    """Programs every switch of ``topology``; see the module docstring."""

    def __init__(self, topology: Topology, p4info: p4info_pb2.P4Info,
                 device_config: bytes | None, *, election_id: ElectionId = DAEMON_ELECTION_ID,
                 options: NetworkOptions = NetworkOptions(), timeout: float = 3.0,
                 state_file: Path | None = None, log: Log | None = None,
                 set_queues: bool = True, reconnect: bool = True) -> None:
        self.topology = topology
        self.p4info_msg = p4info
        self.p4info = P4Info(p4info)
        self.codec = Codec(self.p4info)
        self.device_config = device_config
        self.cookie = pipeline_cookie(p4info, device_config or b"")
        self.options = options
        self.timeout = timeout
        self.state_file = state_file
        self.log = log or (lambda msg: None)
        self.set_queues = set_queues
        self.reconnect_enabled = reconnect
        self.lock = threading.RLock()
        self.settled = threading.Condition(self.lock)   # notified on every job report
        self.jobs = JobTracker()
        self._stopping = threading.Event()
        self.ready = threading.Event()   # set by the owner once start-up programming is done
        self.state = self._load_state()
        self._pcn_laws: dict[int, PcnLawState] = {}
        self._pcn_last: dict[int, tuple[int, int]] = {}   # job -> (seen, congested) last read
        self.switches: dict[str, ManagedSwitch] = {}
        for name, sw in topology.switches.items():
            conn = SwitchConnection(name, sw.grpc_addr, sw.device_id, election_id, timeout,
                                    on_stream_lost=self._on_stream_lost,
                                    on_primary_regained=self._on_primary_regained)
            self.switches[name] = ManagedSwitch(name, conn, self._plan(name))

    # -- state -----------------------------------------------------------------------------
    def _load_state(self) -> ControllerState:
        # the state file is the truth after a restart: a corrupt one stops us (ConfigError)
        doc = read_state(self.state_file) if self.state_file is not None else None
        self.state_loaded = doc is not None
        return ControllerState() if doc is None else ControllerState.from_json(doc)

    def _save_state(self) -> None:
        if self.state_file is not None:
            write_state(self.state_file, json.dumps(self.state.to_json(), indent=1))

    def _plan(self, name: str) -> SwitchPlan:
        return plan_switch(self.topology, name, self.options, self.state.ecn_overrides.get(name))

    def policy_entries(self, policy: Policy | None = None,
                       slots: dict[RuleKey, int] | None = None,
                       job_states: dict[int, JobState] | None = None) -> list[TableEntry]:
        """The job_features, gradient_class and pcn_job entries of ``policy`` (default: the
        current one, with the previous entries of its jobs' pending changes, so a switch that
        reconnects in the middle of one gets them back)."""
        if policy is None:
            return translate(self.state.policy, self.state.slots, self.state.job_states,
                             self.jobs.pending(), self.state.pcn_thresholds)
        return translate(policy, slots if slots is not None else self.state.slots,
                         job_states if job_states is not None else self.state.job_states,
                         pcn_thresholds=self.state.pcn_thresholds)

    def desired(self, name: str) -> list[Entity]:
        """Everything that should be installed on switch ``name``."""
        ms = self.switches[name]
        return [self.codec.normalize(e) for e in [*ms.plan.entities, *self.policy_entries()]]

    # -- reading installed state -----------------------------------------------------------
    def installed(self, name: str, tables: Sequence[str], profiles: Sequence[str] = ()) -> list[Entity]:
        """Entities of ``tables`` (and members/groups of ``profiles``) read from the switch."""
        conn = self.switches[name].conn
        req = [self.codec.wildcard_table(t) for t in tables]
        for p in profiles:
            req.extend(self.codec.wildcard_profile(p))
        return [self.codec.decode(e) for e in conn.read(req)]

    # -- connecting ------------------------------------------------------------------------
    def start(self, push_pipeline: bool = True, sync: bool = True) -> dict[str, str | None]:
        """Connect to every switch in parallel and bring each in step; returns name -> error.

        With ``sync=False`` nothing is written at start: the switches keep what they hold
        (a one-shot CLI acting on a running network), and only a loaded pipeline is checked.
        """
        self.state.slots = assign_slots(self.state.policy, self.state.slots)
        with ThreadPoolExecutor(max_workers=max(1, len(self.switches))) as pool:
            results = dict(zip(self.switches, pool.map(
                lambda n: self._bring_up(n, push_pipeline, sync), self.switches)))
        if sync:
            self._save_state()
        return results

    def _bring_up(self, name: str, push_pipeline: bool, sync: bool = True) -> str | None:
        ms = self.switches[name]
        try:
            primary = ms.conn.connect()
            if not primary:
                raise errors.NotPrimaryError(
                    "another controller is primary; we stay backup and do not write", name)
            with self.lock:
                if sync:
                    self._sync_switch(name, push_pipeline)
                elif ms.conn.get_pipeline() is None:
                    raise errors.PipelineError("no pipeline loaded", name)
                else:
                    ms.pipeline_loaded = True
            ms.last_error = None
            self.log(f"{name}: up (pipeline loaded, state synced)")
            return None
        except errors.ControllerError as exc:
            ms.last_error = str(exc)
            self.log(f"{name}: {exc}")
            if not isinstance(exc, errors.NotPrimaryError) and self.reconnect_enabled \
                    and not isinstance(exc, (errors.P4NameError, errors.PolicyError)):
                self._schedule_reconnect(ms)
            return str(exc)

    def _sync_switch(self, name: str, push_pipeline: bool) -> Changes:
        """Make sure the pipeline is ours, then write the difference to the desired state."""
        ms = self.switches[name]
        ms.pipeline_loaded = False
        loaded = ms.conn.get_pipeline()
        ours = loaded is not None and loaded[1] == self.cookie
        if loaded is None and ms.lost_at is not None:
            self._forget_counters(ms)
        if not ours:
            if self.device_config is None or not push_pipeline:
                if loaded is None:
                    raise errors.PipelineError("no pipeline loaded (give the BMv2 JSON to push one)", name)
            else:
                ms.conn.set_pipeline(self.p4info_msg, self.device_config, self.cookie)
                ms.queues_set = False
                self.log(f"{name}: pipeline pushed")
        if self.set_queues and not ms.queues_set:
            self._set_queues(ms)
        have = self.installed(name, NETWORK_TABLES + POLICY_TABLES, (N.ECMP_PROFILE,))
        changes = diff(self.desired(name), have)
        apply_changes(ms.conn, self.codec, changes)
        ms.pipeline_loaded = True
        return changes

    def _set_queues(self, ms: ManagedSwitch) -> None:
        sw = self.topology.switches[ms.name]
        host = sw.grpc_addr.rpartition(":")[0] or "127.0.0.1"
        try:
            run_commands(sw.thrift_port, [q.command() for q in ms.plan.queues], ms.name, host)
            ms.queues_set = True
        except errors.ThriftError as exc:
            # queues keep their defaults; forwarding and policies still work
            self.log(f"{ms.name}: queue settings not applied: {exc}")

    def _forget_counters(self, ms: ManagedSwitch) -> None:
        """A switch we had programmed came back without a pipeline: it restarted, and every
        counter it holds starts from zero again. Readings taken before are no baseline."""
        ms.switch_restarts += 1
        self._pcn_last.clear()
        for rt in self.jobs.jobs.values():
            rt.switch_totals = None
        self.log(f"{ms.name}: the switch restarted (no pipeline loaded): re-programming it from "
                 "the desired state; its counters restarted from zero")

    def _on_stream_lost(self, conn: SwitchConnection) -> None:
        ms = self.switches.get(conn.name)
        if ms is None or self._stopping.is_set():
            return
        if ms.lost_at is None:
            ms.lost_at = time.monotonic()
        ms.last_error = "stream channel lost" + (f": {conn.stream_errors[-1]}" if conn.stream_errors else "")
        ms.pipeline_loaded = False
        self.log(f"{ms.name}: {ms.last_error}; reconnecting")
        if self.reconnect_enabled:
            self._schedule_reconnect(ms)

    def _on_primary_regained(self, conn: SwitchConnection) -> None:
        ms = self.switches.get(conn.name)
        if ms is None or self._stopping.is_set():
            return
        self.log(f"{ms.name}: primary again; re-syncing state")
        threading.Thread(target=self._resync, args=(ms,), daemon=True,
                         name=f"resync-{ms.name}").start()

    def _resync(self, ms: ManagedSwitch) -> None:
        if self._stopping.is_set():
            return
        try:
            with self.lock:
                self._sync_switch(ms.name, True)
            ms.last_error = None
        except errors.ControllerError as exc:
            ms.last_error = str(exc)
            self.log(f"{ms.name}: re-sync failed: {exc}")

    def _schedule_reconnect(self, ms: ManagedSwitch) -> None:
        if ms.reconnecting or self._stopping.is_set():
            return
        ms.reconnecting = True
        threading.Thread(target=self._reconnect_loop, args=(ms,), daemon=True,
                         name=f"reconnect-{ms.name}").start()

    def _reconnect_loop(self, ms: ManagedSwitch) -> None:
        delay = 0.2
        try:
            while not self._stopping.is_set():
                if self._stopping.wait(delay):
                    return
                # a local switch being restarted is back within seconds: poll it often
                delay = min(delay * 2, RECONNECT_MAX_DELAY_S)
                try:
                    if not ms.conn.connect():
                        ms.last_error = "another controller is primary; we stay backup"
                        continue
                    with self.lock:
                        self._sync_switch(ms.name, True)
                    ms.last_error = None
                    ms.restarts += 1
                    since = ""
                    if ms.lost_at is not None:
                        ms.last_recovery_s = round(time.monotonic() - ms.lost_at, 3)
                        ms.lost_at = None
                        since = f"; programmed {ms.last_recovery_s} s after the stream was lost"
                    self.log(f"{ms.name}: reconnected, pipeline and state restored{since}")
                    return
                except errors.ControllerError as exc:
                    ms.last_error = str(exc)
        finally:
            ms.reconnecting = False

    def stop(self) -> None:
        """Close every connection; stop reconnecting."""
        self._stopping.set()
        for ms in self.switches.values():
            ms.conn.close()

    def reachable(self) -> list[str]:
        """Switches we are primary for with the pipeline loaded and state synced."""
        return [n for n, ms in self.switches.items() if ms.conn.is_primary and ms.pipeline_loaded]

    # -- policy ----------------------------------------------------------------------------
    def apply_policy(self, policy: Policy, job_states: dict[int, JobState] | None = None, *,
                     updates: dict[int, JobState] | None = None, cause: str = "operator",
                     force: bool = True, pcn_thresholds: dict[int, int] | None = None) -> dict[str, Any]:
        """Install ``policy`` on every reachable switch as a diff, all or nothing.

        ``job_states`` replaces every job's state, ``updates`` changes some (merged into the
        current states once any pending change they would collide with has applied). A job
        whose switch or host behaviour changes gets a new policy epoch; while it runs, the
        change applies from the round :meth:`JobRuntime.effective_round_for` gives (``cause``
        ``ps`` = a report of its PS, else an operator or the policy's schedule) and its
        previous entries stay for its previous epoch. ``force`` False skips the switches when
        nothing changed (the per-round reports). ``pcn_thresholds`` replaces the jobs' adapted
        PCN thresholds (the PCN law's output); a job whose PCN setting changed restarts its law
        from the policy's threshold.
        """
        if cause not in CAUSES:
            raise ValueError(cause)
        self.check_priorities(policy)
        give_up = time.monotonic() + SETTLE_TIMEOUT_S
        with self.settled:
            while True:
                now = time.monotonic()
                states = dict(self.state.job_states if job_states is None else job_states)
                states.update(updates or {})
                changed = [j for j in {*(x.job_id for x in policy.jobs),
                                       *(x.job_id for x in self.state.policy.jobs)}
                           if job_signature(self.state.policy.job(j), self.state.job_states.get(j, JobState()))
                           != job_signature(policy.job(j), states.get(j, JobState()))]
                blocked = [j for j in changed if self.jobs.get(j).blocks(cause, now)]
                if not blocked:
                    break
                if now >= give_up:
                    rt = self.jobs.get(blocked[0])
                    raise errors.PolicyError(
                        "job", f"job {rt.job_id}: its previous change (epoch {rt.epoch}) applies from "
                               f"round {rt.effective_round} but its PS last reported round "
                               f"{rt.last_round}; try again once it got there")
                self.settled.wait(give_up - now)
            generations = self._next_generations(policy, states, changed, cause, now)
            pending = {j: g.pending.previous for j, g in generations.items() if g.pending is not None}
            pending.update({j: p for j, p in self.jobs.pending().items()
                            if j not in generations and policy.job(j) is not None})
            if not force and not changed and pending == self.jobs.pending():
                self.state.job_states = states
                return {"switches": {}, "pending": [], "rules": None, "epochs": {}}
            slots = assign_slots(policy, self.state.slots)
            thresholds = dict(self.state.pcn_thresholds if pcn_thresholds is None else pcn_thresholds)
            for job in policy.jobs:
                old = self.state.policy.job(job.job_id)
                if old is None or old.pcn != job.pcn:
                    thresholds.pop(job.job_id, None)
                    self._pcn_laws.pop(job.job_id, None)
            want = [self.codec.normalize(e) for e in translate(policy, slots, states, pending,
                                                               thresholds)]
            done: list[tuple[str, list[Op]]] = []
            summary: dict[str, Any] = {}
            skipped = [n for n in self.switches if n not in self.reachable()]
            targets = self.reachable()
            # read every switch's installed classes at once (separate switch processes)
            with ThreadPoolExecutor(max_workers=max(1, len(targets))) as pool:
                reads = [pool.submit(self.installed, n, POLICY_TABLES) for n in targets]
            for name, read in zip(targets, reads):
                ms = self.switches[name]
                try:
                    changes = diff(want, read.result())
                    ops = apply_changes(ms.conn, self.codec, changes)
                except errors.ControllerError as exc:
                    for prev, prev_ops in reversed(done):
                        try:
                            rollback(self.switches[prev].conn, self.codec, [prev_ops], exc)
                        except errors.ControllerError as rb_exc:
                            self.log(f"{prev}: {rb_exc}")
                    raise
                done.append((name, ops))
                summary[name] = changes.summary()
            self.state.policy, self.state.slots, self.state.job_states = policy, slots, states
            self.state.pcn_thresholds = thresholds
            for j, rt in self.jobs.jobs.items():
                if j not in generations and rt.pending is not None and policy.job(j) is None:
                    rt.pending = None
            for j, gen in generations.items():
                self.jobs.jobs[j] = gen
                self.log(f"job {j}: epoch {gen.epoch} applies from round {gen.effective_round} "
                         f"({gen.last_adaptation['what'] if gen.last_adaptation else 'change'}, "
                         f"by {cause})")
            self._save_state()
            return {"switches": summary, "pending": skipped, "rules": len(want),
                    "epochs": {str(j): {"epoch": g.epoch, "effective_round": g.effective_round}
                               for j, g in generations.items()}}

    def _next_generations(self, policy: Policy, states: dict[int, JobState], changed: list[int],
                          cause: str, now: float) -> dict[int, JobRuntime]:
        """Copies of the changed jobs' runtimes with their new epoch (committed by the caller
        once every switch took the entries)."""
        out: dict[int, JobRuntime] = {}
        for j in changed:
            rt = self.jobs.get(j)
            new = JobRuntime(**{k: getattr(rt, k) for k in rt.__dataclass_fields__})
            old_job = self.state.policy.job(j)
            # a job new to an idle tracker starts at epoch 1; every later change counts
            new.epoch = rt.epoch if old_job is None and not rt.running(now) else rt.epoch + 1
            new.effective_round = rt.effective_round_for(cause, now)
            if not rt.running(now) or old_job is None or policy.job(j) is None:
                new.pending = None
            elif rt.pending is not None:   # not blocked: merged into the pending change
                new.pending = rt.pending
            else:
                new.pending = Pending(PreviousGeneration(wire_epoch(rt.epoch), old_job,
                                                         self.state.job_states.get(j, JobState())),
                                      rt.epoch, new.effective_round)
            new.last_adaptation = {"round": new.effective_round, "epoch": new.epoch, "by": cause,
                                   "what": _what_changed(old_job, self.state.job_states.get(j, JobState()),
                                                         policy.job(j), states.get(j, JobState())),
                                   "at": time.time()}
            out[j] = new
        return out

    def check_priorities(self, policy: Policy) -> None:
        """Every rule's queue must exist on every switch (BMv2 drops priorities >= its queues)."""
        if not self.topology.switches:
            return
        fewest = min(self.topology.switches.values(), key=lambda sw: sw.priority_queues)
        for ji, job in enumerate(policy.jobs):
            for ri, rule in enumerate(job.rules):
                if rule.priority >= fewest.priority_queues:
                    raise errors.PolicyError(
                        f"jobs[{ji}].layers[{ri}].priority",
                        f"queue {rule.priority} does not exist on switch {fewest.name} "
                        f"({fewest.priority_queues} priority queues: 0..{fewest.priority_queues - 1})")

    def set_job_state(self, job_id: int, round_: int | None, critical: bool) -> dict[str, Any]:
        """An operator sets a job's round/regime; re-applies phase-dependent bounds."""
        if self.state.policy.job(job_id) is None:
            raise errors.PolicyError("job", f"no job {job_id} in the current policy")
        with self.lock:
            if round_ is None:
                round_ = self.state.job_states.get(job_id, JobState()).round
            result = self.apply_policy(self.state.policy, updates={job_id: JobState(round_, critical)})
            self.jobs.get(job_id).set_by = "operator"
            return result

    # -- jobs (the hosts' side of the policy) ----------------------------------------------
    def job_view(self, job_id: int, layers: int, *, fetch: bool = True) -> dict[str, Any]:
        """The host view of ``job_id`` for a model of ``layers`` layers (docs/contracts.md)."""
        with self.lock:
            job = self.state.policy.job(job_id)
            if job is None:
                raise errors.PolicyError("job", f"no job {job_id} in the current policy")
            rt = self.jobs.touch(job_id) if fetch else self.jobs.get(job_id)
            if fetch:
                rt.fetched = True
            view = host_view(job, self.state.job_states.get(job_id, JobState()), layers)
            view["phase"]["set_by"] = rt.set_by
            view.update(job=job_id, name=job.name, epoch=rt.epoch, wire_epoch=wire_epoch(rt.epoch),
                        effective_round=rt.effective_round, previous=None)
            if rt.pending is not None:
                prev = rt.pending.previous
                old = host_view(prev.job, prev.state, layers)
                old.update(epoch=rt.pending.previous_epoch, wire_epoch=prev.wire_epoch)
                view["previous"] = old
            return view

    def job_report(self, job_id: int, layers: int, report: dict[str, Any]) -> dict[str, Any]:
        """A PS's report of one round: retire a previous generation it passed, follow its
        regime, record the round (with this round's push drops on the switches); the view."""
        round_ = report["round"]
        with self.settled:
            if self.state.policy.job(job_id) is None:
                raise errors.PolicyError("job", f"no job {job_id} in the current policy")
            rt = self.jobs.touch(job_id)
            rt.last_round = round_
            retired = rt.pending is not None and round_ >= rt.pending.effective_round
            if retired:
                self.log(f"job {job_id}: round {round_} reached, epoch {rt.pending.previous_epoch}'s "
                         "entries removed")
                rt.pending = None
            old = self.state.job_states.get(job_id, JobState())
            regime = report.get("regime")
            critical = old.critical if regime is None else regime == "critical"
            if regime is not None:
                rt.set_by = "ps"
            try:
                if not rt.blocks("ps", time.monotonic()):   # else: the next report applies it
                    self.apply_policy(self.state.policy, cause="ps", force=retired,
                                      updates={job_id: JobState(round_ + 1, critical)})
            finally:
                self.settled.notify_all()
            rt = self.jobs.get(job_id)
            switch = self._job_push_counts(job_id, rt)
            violations = report.get("violations") or []
            rt.violations = [a + b for a, b in zip(rt.violations or [0] * len(violations), violations)]
            rt.reports.append({**{k: report.get(k) for k in (
                "round", "regime", "push_s", "round_time_s", "delivered", "bounds", "violations",
                "deadline_s", "tele_max_qdepth", "tele_qdelay_us", "deadline_adaptation", "epoch")},
                "switch_push": switch})
            if report.get("deadline_adaptation"):
                rt.last_deadline_adaptation = {**report["deadline_adaptation"], "at": time.time()}
            view = self.job_view(job_id, layers, fetch=False)
            view["switch_push"] = switch
            return view

    def _job_push_counts(self, job_id: int, rt: JobRuntime) -> dict[str, int] | None:
        """This round's push-stage (seen, dropped) of the job's classes over every reachable
        switch (the change since the previous report), or None when no switch answered."""
        slots = [i.slot for i in self.slot_infos() if i.job_id == job_id]
        seen = dropped = 0
        answered = False
        for name in self.reachable():
            reqs = [self.codec.counter_request(c, N.stage_index(slot, False)) for slot in slots
                    for c in (N.STAGE_SEEN_CTR, N.STAGE_DROPPED_CTR)]
            if not reqs:
                continue
            try:
                rows = list(map(self.codec.decode_counter, self.switches[name].conn.read(reqs)))
            except errors.ControllerError as exc:
                self.log(f"{name}: {exc}")
                continue
            answered = True
            seen += sum(pk for c, _, pk, _ in rows if c == N.STAGE_SEEN_CTR)
            dropped += sum(pk for c, _, pk, _ in rows if c == N.STAGE_DROPPED_CTR)
        if not answered:
            return None
        before = rt.switch_totals
        rt.switch_totals = (seen, dropped)
        if before is None:
            return None
        return {"seen": seen - before[0], "dropped": dropped - before[1]}

    def jobs_status(self) -> list[dict[str, Any]]:
        """Every job that fetched its view or reported: round, regime, epoch, per-layer delivered
        vs bound, violations, recent rounds, last adaptation."""
        now = time.monotonic()
        out = []
        with self.lock:
            for j, rt in sorted(self.jobs.jobs.items()):
                job = self.state.policy.job(j)
                if job is None or not (rt.fetched or rt.last_round is not None):
                    continue
                st = self.state.job_states.get(j, JobState())
                last = rt.reports[-1] if rt.reports else {}
                delivered = last.get("delivered") or []
                bounds = last.get("bounds") or []
                out.append({
                    "job": j, "name": job.name, "running": rt.running(now), "round": rt.last_round,
                    "regime": "critical" if st.critical else "normal", "set_by": rt.set_by,
                    "epoch": rt.epoch, "effective_round": rt.effective_round,
                    "pending": rt.pending is not None,
                    "layers": [{"layer": i, "delivered": d, "bound": b,
                                "violations": rt.violations[i] if i < len(rt.violations) else 0}
                               for i, (d, b) in enumerate(zip(delivered, bounds))],
                    "violations": sum(rt.violations), "rounds": list(rt.reports),
                    "last_adaptation": rt.last_adaptation,
                    "control_laws": {
                        "early_close": job.early_close,
                        "deadline_s": last.get("deadline_s"),
                        "last_deadline_adaptation": rt.last_deadline_adaptation,
                        "pcn_threshold": pcn_threshold(job, self.state.pcn_thresholds),
                        "pcn_law": None if job.pcn is None else job.pcn.adapt,
                        "last_pcn_adaptation": self.last_adaptation(j)},
                    "age_s": round(now - rt.last_seen, 3)})
        return out

    def phase_status(self, job_id: int | None = None) -> list[dict[str, Any]]:
        """Per job of the policy: round, regime and who set it, and the phase bounds now."""
        out = []
        with self.lock:
            for job in self.state.policy.jobs:
                if job_id is not None and job.job_id != job_id:
                    continue
                st = self.state.job_states.get(job.job_id, JobState())
                rt = self.jobs.get(job.job_id)
                scheduled = st.round is not None and any(
                    ph.rounds[0] <= st.round <= ph.rounds[1] for r in job.rules for ph in r.phases)
                out.append({"job": job.job_id, "name": job.name, "round": st.round,
                            "regime": "critical" if st.critical else "normal", "set_by": rt.set_by,
                            "scheduled": scheduled, "epoch": rt.epoch,
                            "effective_round": rt.effective_round,
                            "bounds": [{"layers": list(r.layers), "mag_classes": list(r.mag_classes),
                                        "push": r.bound_at(st.round, st.critical)} for r in job.rules]})
            if job_id is not None and not out:
                raise errors.PolicyError("job", f"no job {job_id} in the current policy")
        return out

    def slot_infos(self) -> list[SlotInfo]:
        """What each budget slot of the current policy stands for."""
        return slot_table(self.state.policy, self.state.slots, self.state.job_states)

    # -- PCN -------------------------------------------------------------------------------
    def set_pcn(self, switch: str, port: int, threshold: int | None = None,
                normal: int | None = None) -> dict[str, Any]:
        """Change one port's PCN (and optionally normal ECN) threshold."""
        if switch not in self.switches:
            raise errors.ConfigError(f"unknown switch '{switch}' (known: {', '.join(self.switches)})")
        if port not in self.topology.ports(switch):
            raise errors.ConfigError(f"switch {switch} has no port {port} "
                                     f"(ports: {', '.join(map(str, sorted(self.topology.ports(switch))))})")
        with self.lock:
            ms = self.switches[switch]
            if switch not in self.reachable():
                raise errors.UnreachableError(ms.last_error or "not connected", switch)
            cur = self.state.ecn_overrides.get(switch, {}).get(
                port, (self.options.ecn_normal, self.options.ecn_pcn))
            new = (cur[0] if normal is None else normal, cur[1] if threshold is None else threshold)
            entry = self.codec.normalize(ecn_entry(port, *new))
            have = {e.key: e for e in self.installed(switch, (N.ECN_TABLE,))}
            changes = Changes()
            if entry.key in have:
                if have[entry.key] != entry:
                    changes.modifies.append((have[entry.key], entry))
            else:
                changes.inserts.append(entry)
            apply_changes(ms.conn, self.codec, changes)
            self.state.ecn_overrides.setdefault(switch, {})[port] = new
            ms.plan = self._plan(switch)
            self._save_state()
            return {"switch": switch, "port": port, "normal": new[0], "pcn": new[1]}

    def pcn_table(self) -> list[dict[str, Any]]:
        """ECN/PCN thresholds and PCN counters per reachable switch port."""
        out = []
        for name in self.switches:
            ports = sorted(self.topology.ports(name))
            row_base = {"switch": name}
            if name not in self.reachable():
                out.append({**row_base, "reachable": False, "error": self.switches[name].last_error})
                continue
            conn = self.switches[name].conn
            entries = {e.match[0][1].value: e for e in self.installed(name, (N.ECN_TABLE,))
                       if isinstance(e, TableEntry) and e.action is not None}
            reqs = [self.codec.counter_request(c, p) for p in ports
                    for c in (N.PCN_START_CTR, N.PCN_ARRIVAL_CTR, N.PCN_EXPIRED_CTR)]
            counts = {(c, i): pk for c, i, pk, _ in map(self.codec.decode_counter, conn.read(reqs))}
            for p in ports:
                e = entries.get(p)
                out.append({**row_base, "reachable": True, "port": p,
                            "peer": self.topology.ports(name)[p],
                            "normal": e.action.param(N.SET_ECN_NORMAL) if e else None,
                            "pcn": e.action.param(N.SET_ECN_PCN) if e else None,
                            "starts": counts.get((N.PCN_START_CTR, p), 0),
                            "arrivals": counts.get((N.PCN_ARRIVAL_CTR, p), 0),
                            "expired": counts.get((N.PCN_EXPIRED_CTR, p), 0)})
        return out

    # -- PCN control law ---------------------------------------------------------------------
    def _job_counters(self, job_id: int) -> tuple[int, int] | None:
        """(seen, congested) packets of a job's slots summed over every reachable switch;
        None when no switch is reachable."""
        job = self.state.policy.job(job_id)
        if job is None:
            return None
        slots = [self.state.slots[rule_key(job, r)] for r in job.rules
                 if rule_key(job, r) in self.state.slots]
        if not slots:
            return None
        totals = [0, 0]
        reached = False
        for name in self.reachable():
            reqs = [self.codec.counter_request(c, s) for s in slots
                    for c in (N.SLOT_SEEN_CTR, N.SLOT_CONGESTED_CTR)]
            for c, _, pk, _ in map(self.codec.decode_counter, self.switches[name].conn.read(reqs)):
                totals[0 if c == N.SLOT_SEEN_CTR else 1] += pk
            reached = True
        return (totals[0], totals[1]) if reached else None

    def adapt_pcn(self) -> list[dict[str, Any]]:
        """One step of the PCN threshold law for every job whose law is on
        (docs/control-laws.md); installs and records each change. Returns the changes."""
        changes: list[dict[str, Any]] = []
        with self.lock:
            thresholds = dict(self.state.pcn_thresholds)
            for job in self.state.policy.jobs:
                if job.pcn is None or not job.pcn.adapt:
                    continue
                now = self._job_counters(job.job_id)
                if now is None:
                    continue
                last = self._pcn_last.get(job.job_id)
                self._pcn_last[job.job_id] = now
                if last is None or now[0] < last[0]:
                    continue   # first reading (or counters reset): a baseline only
                current = pcn_threshold(job, thresholds)
                assert current is not None
                law = self._pcn_laws.get(job.job_id)
                if law is None or law.threshold != current:
                    law = self._pcn_laws[job.job_id] = PcnLawState(current, job.pcn.floor,
                                                                   job.pcn.ceiling)
                obs = PcnObservation(now[0] - last[0], now[1] - last[1])
                step = pcn_step(law, obs)
                if step.changed:
                    thresholds[job.job_id] = step.threshold
                    changes.append({"time": round(time.time(), 3), "job": job.job_id,
                                    "law": "pcn_threshold", "value": step.threshold,
                                    "previous": step.previous, "reason": step.reason,
                                    "round": self.state.job_states.get(job.job_id, JobState()).round,
                                    "seen": obs.seen, "congested": obs.congested})
            if changes:
                try:
                    self.apply_policy(self.state.policy, pcn_thresholds=thresholds)
                except errors.ControllerError:
                    for c in changes:   # not installed: the law restarts from what is in force
                        self._pcn_laws.pop(c["job"], None)
                    raise
                self.state.adaptations = (self.state.adaptations + changes)[-ADAPTATIONS_KEPT:]
                self._save_state()
                for c in changes:
                    self.log(f"job {c['job']}: PCN threshold {c['previous']} -> {c['value']} "
                             f"({c['reason']})")
        return changes

    def start_adapting(self, interval: float) -> threading.Thread | None:
        """Run :meth:`adapt_pcn` every ``interval`` seconds until :meth:`stop` (0 = never)."""
        if interval <= 0:
            return None

        def loop() -> None:
            while not self._stopping.wait(interval):
                try:
                    self.adapt_pcn()
                except errors.ControllerError as exc:
                    self.log(f"PCN law: {exc}")

        thread = threading.Thread(target=loop, daemon=True, name="pcn-law")
        thread.start()
        return thread

    def last_adaptation(self, job_id: int) -> dict[str, Any] | None:
        """The most recent recorded control-law change of ``job_id``."""
        return next((a for a in reversed(self.state.adaptations) if a.get("job") == job_id), None)

    def pcn_jobs(self) -> list[dict[str, Any]]:
        """Per job with a PCN setting: threshold in force, law on/off, bounds, per-switch PCN
        start/arrival counts of that job, and its last adaptation."""
        rows = []
        jobs = [j for j in self.state.policy.jobs if j.pcn is not None]
        per_switch: dict[str, dict[tuple[str, int], int]] = {}
        for name in self.reachable():
            reqs = [self.codec.counter_request(c, j.job_id) for j in jobs
                    for c in (N.PCN_JOB_START_CTR, N.PCN_JOB_ARRIVAL_CTR)]
            per_switch[name] = {(c, i): pk for c, i, pk, _ in
                                map(self.codec.decode_counter, self.switches[name].conn.read(reqs))} \
                if reqs else {}
        for job in jobs:
            assert job.pcn is not None
            rows.append({"job": job.job_id, "name": job.name,
                         "threshold": pcn_threshold(job, self.state.pcn_thresholds),
                         "adapt": job.pcn.adapt, "floor": job.pcn.floor,
                         "ceiling": job.pcn.ceiling, "policy_threshold": job.pcn.threshold,
                         "starts": {n: c.get((N.PCN_JOB_START_CTR, job.job_id), 0)
                                    for n, c in per_switch.items()},
                         "arrivals": {n: c.get((N.PCN_JOB_ARRIVAL_CTR, job.job_id), 0)
                                      for n, c in per_switch.items()},
                         "last_adaptation": self.last_adaptation(job.job_id)})
        return rows

    # -- stats -----------------------------------------------------------------------------
    def stats(self, switch: str | None = None) -> dict[str, Any]:
        """Per switch: per policy class seen/dropped/marked and loss vs bound; per queue counters."""
        names = [switch] if switch else list(self.switches)
        for n in names:
            if n not in self.switches:
                raise errors.ConfigError(f"unknown switch '{n}' (known: {', '.join(self.switches)})")
        infos = self.slot_infos()
        out: dict[str, Any] = {}
        for name in names:
            if name not in self.reachable():
                out[name] = {"reachable": False, "error": self.switches[name].last_error}
                continue
            conn = self.switches[name].conn
            sw = self.topology.switches[name]
            reqs = [self.codec.counter_request(c, i.slot) for i in infos
                    for c in (N.SLOT_SEEN_CTR, N.SLOT_DROPPED_CTR, N.SLOT_MARKED_CTR)]
            reqs += [self.codec.counter_request(c, N.stage_index(i.slot, pull)) for i in infos
                     for pull in (False, True) for c in (N.STAGE_SEEN_CTR, N.STAGE_DROPPED_CTR)]
            queues = [(p, q) for p in sorted(self.topology.ports(name)) for q in range(sw.priority_queues)]
            reqs += [self.codec.counter_request(c, N.queue_index(p, q)) for p, q in queues
                     for c in (N.QUEUE_TX_CTR, N.QUEUE_DROPPED_CTR, N.QUEUE_MARKED_CTR)]
            counts = {(c, i): pk for c, i, pk, _ in map(self.codec.decode_counter, conn.read(reqs))}
            classes = []
            for i in infos:
                seen = counts.get((N.SLOT_SEEN_CTR, i.slot), 0)
                dropped = counts.get((N.SLOT_DROPPED_CTR, i.slot), 0)
                loss = dropped / seen if seen else 0.0
                stages = {}
                for stage, pull, bound in (("push", False, i.loss_bound), ("pull", True, i.pull_bound)):
                    s_seen = counts.get((N.STAGE_SEEN_CTR, N.stage_index(i.slot, pull)), 0)
                    s_dropped = counts.get((N.STAGE_DROPPED_CTR, N.stage_index(i.slot, pull)), 0)
                    s_loss = s_dropped / s_seen if s_seen else 0.0
                    stages[stage] = {"seen": s_seen, "dropped": s_dropped, "loss": s_loss,
                                     "bound": bound, "within_bound": s_loss <= bound + 1e-12}
                classes.append({"job": i.job_id, "name": i.job_name, "layers": list(i.layers),
                                "mag_classes": list(i.mag_classes), "slot": i.slot,
                                "priority": i.priority, "drop_eligible": i.drop_eligible,
                                "seen": seen, "dropped": dropped,
                                "marked": counts.get((N.SLOT_MARKED_CTR, i.slot), 0),
                                "loss": loss, "bound": i.loss_bound, "pull_bound": i.pull_bound,
                                **stages,
                                "within_bound": all(st["within_bound"] for st in stages.values())})
            qrows = [{"port": p, "prio": q,
                      "tx": counts.get((N.QUEUE_TX_CTR, N.queue_index(p, q)), 0),
                      "dropped": counts.get((N.QUEUE_DROPPED_CTR, N.queue_index(p, q)), 0),
                      "marked": counts.get((N.QUEUE_MARKED_CTR, N.queue_index(p, q)), 0)}
                     for p, q in queues]
            out[name] = {"reachable": True, "classes": classes, "queues": qrows}
        return out

    def switch_status(self) -> list[dict[str, Any]]:
        """Per switch: address, entities installed (None when unreachable), reachable, primary,
        pipeline loaded, reconnects, restarts seen (reconnects that found it empty) and the last
        time from stream lost to programmed, last error."""
        out = []
        for name, ms in self.switches.items():
            entries = None
            if name in self.reachable():
                try:
                    entries = len(self.installed(name, NETWORK_TABLES + POLICY_TABLES, (N.ECMP_PROFILE,)))
                except errors.ControllerError:
                    pass
            out.append({"switch": name, "address": ms.conn.address, "entries": entries,
                        "device_id": ms.conn.device_id, "connected": ms.conn.connected,
                        "primary": ms.conn.is_primary,
                        "pipeline_loaded": ms.pipeline_loaded and ms.conn.connected,
                        "reconnects": ms.restarts, "switch_restarts": ms.switch_restarts,
                        "last_recovery_s": ms.last_recovery_s,
                        "down_for_s": (None if ms.lost_at is None
                                       else round(time.monotonic() - ms.lost_at, 3)),
                        "error": ms.last_error})
        return out

    def wait_reachable(self, names: Sequence[str], timeout: float) -> bool:
        """Block until every switch in ``names`` is reachable again (for tests and scripts)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if all(n in self.reachable() for n in names):
                return True
            time.sleep(0.05)
        return False


def _what_changed(old_job: Any, old: JobState, new_job: Any, new: JobState) -> str:
    """A short description of a job's change, for logs and `gradctl jobs`."""
    if old_job is None:
        return "job added"
    if new_job is None:
        return "job removed"
    if old.critical != new.critical:
        return f"regime {'critical' if new.critical else 'normal'}"
    parts = []
    for r_old, r_new in zip(old_job.rules, new_job.rules):
        a, b = r_old.bound_at(old.round, old.critical), r_new.bound_at(new.round, new.critical)
        if a != b or r_old.layers != r_new.layers:
            parts.append(f"layers {r_new.layers[0]}-{r_new.layers[1]} push {a:g}->{b:g}")
    if len(old_job.rules) != len(new_job.rules):
        parts.append(f"{len(old_job.rules)}->{len(new_job.rules)} rules")
    return "; ".join(parts) or "rules changed"
