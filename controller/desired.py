"""Desired-state sync: what each switch should hold, and bringing a switch to it.

A switch's desired state is its network plan (ARP, routes, ECMP groups, DSCP classes, ECN/PCN
thresholds from the topology; ``network.py``) plus the policy's entries (classes, job features,
PCN thresholds, DDL flows; ``policy.translate``), including the previous entries of jobs whose
change is still pending. :meth:`DesiredState.sync_switch` makes sure the switch runs our
pipeline (recognised by its cookie), sets its queues, reads what it holds and writes only the
difference (``sync.py``).
"""
from __future__ import annotations

import hashlib
from typing import Callable

from p4.config.v1 import p4info_pb2

from controller import errors
from controller import p4names as N
from controller.context import ControllerContext, ManagedSwitch
from controller.entries import Entity, TableEntry
from controller.network import SwitchPlan, plan_switch
from controller.policy import JobState, Policy, RuleKey, translate
from controller.sync import Changes, apply_changes, diff
from controller.thrift import run_commands

NETWORK_TABLES = (N.ARP_TABLE, N.ROUTE_TABLE, N.DSCP_TABLE, N.ECN_TABLE)
POLICY_TABLES = (N.CLASS_TABLE, N.JOB_FEATURES_TABLE, N.PCN_JOB_TABLE, N.DDL_FLOW_TABLE)


def pipeline_cookie(p4info: p4info_pb2.P4Info, device_config: bytes) -> int:
    """A 64-bit fingerprint of a pipeline, sent as its cookie to recognise it later."""
    h = hashlib.sha256(p4info.SerializeToString(deterministic=True) + device_config).digest()
    return int.from_bytes(h[:8], "big") >> 1


class DesiredState:
    """Computes every switch's desired state and syncs a switch to it."""

    def __init__(self, ctx: ControllerContext, p4info: p4info_pb2.P4Info,
                 device_config: bytes | None, *, set_queues: bool,
                 on_counters_restarted: Callable[[], None]) -> None:
        self.ctx = ctx
        self.p4info_msg = p4info
        self.device_config = device_config
        self.cookie = pipeline_cookie(p4info, device_config or b"")
        self.set_queues = set_queues
        self.on_counters_restarted = on_counters_restarted

    def plan(self, name: str) -> SwitchPlan:
        """The network part of switch ``name``'s desired state (with its ECN overrides)."""
        return plan_switch(self.ctx.topology, name, self.ctx.options,
                           self.ctx.state.ecn_overrides.get(name))

    def policy_entries(self, policy: Policy | None = None,
                       slots: dict[RuleKey, int] | None = None,
                       job_states: dict[int, JobState] | None = None) -> list[TableEntry]:
        """The job_features, gradient_class and pcn_job entries of ``policy`` (default: the
        current one, with the previous entries of its jobs' pending changes, so a switch that
        reconnects in the middle of one gets them back)."""
        state = self.ctx.state
        if policy is None:
            return translate(state.policy, state.slots, state.job_states,
                             self.ctx.jobs.pending(), state.pcn_thresholds)
        return translate(policy, slots if slots is not None else state.slots,
                         job_states if job_states is not None else state.job_states,
                         pcn_thresholds=state.pcn_thresholds)

    def desired(self, name: str) -> list[Entity]:
        """Everything that should be installed on switch ``name``."""
        ms = self.ctx.switches[name]
        return [self.ctx.codec.normalize(e) for e in [*ms.plan.entities, *self.policy_entries()]]

    def sync_switch(self, name: str, push_pipeline: bool) -> Changes:
        """Make sure the pipeline is ours, then write the difference to the desired state."""
        ms = self.ctx.switches[name]
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
                self.ctx.log(f"{name}: pipeline pushed")
        if self.set_queues and not ms.queues_set:
            self._set_queues(ms)
        have = self.ctx.installed(name, NETWORK_TABLES + POLICY_TABLES, (N.ECMP_PROFILE,))
        changes = diff(self.desired(name), have)
        apply_changes(ms.conn, self.ctx.codec, changes)
        ms.pipeline_loaded = True
        return changes

    def _set_queues(self, ms: ManagedSwitch) -> None:
        sw = self.ctx.topology.switches[ms.name]
        host = sw.grpc_addr.rpartition(":")[0] or "127.0.0.1"
        try:
            run_commands(sw.thrift_port, [q.command() for q in ms.plan.queues], ms.name, host)
            ms.queues_set = True
        except errors.ThriftError as exc:
            # queues keep their defaults; forwarding and policies still work
            self.ctx.log(f"{ms.name}: queue settings not applied: {exc}")

    def _forget_counters(self, ms: ManagedSwitch) -> None:
        """A switch we had programmed came back without a pipeline: it restarted, and every
        counter it holds starts from zero again. Readings taken before are no baseline."""
        ms.switch_restarts += 1
        self.on_counters_restarted()
        self.ctx.log(f"{ms.name}: the switch restarted (no pipeline loaded): re-programming it "
                     "from the desired state; its counters restarted from zero")
