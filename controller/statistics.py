"""Statistics: what the switches count and how they are, as `gradctl` shows it.

Everything here reads (counters, ECN entries, connection state) and writes nothing:
per policy class seen/dropped/marked with the loss against its push and pull bounds and per
queue counters (:meth:`Statistics.stats`), per port ECN/PCN thresholds and PCN counters
(:meth:`Statistics.pcn_table`), and per switch its connection and programming state
(:meth:`Statistics.switch_status`).
"""
from __future__ import annotations

import time
from typing import Any

from controller import errors
from controller import p4names as N
from controller.context import ControllerContext
from controller.desired import NETWORK_TABLES, POLICY_TABLES
from controller.entries import TableEntry
from controller.policy import SlotInfo

STAGES = (("push", False), ("pull", True))   # (name, pull?) of a class's two loss stages


class Statistics:
    """Read-only views of every switch."""

    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx

    def stats(self, switch: str | None = None) -> dict[str, Any]:
        """Per switch: per policy class seen/dropped/marked and loss vs bound; per queue counters."""
        ctx = self.ctx
        names = [switch] if switch else list(ctx.switches)
        for n in names:
            if n not in ctx.switches:
                raise errors.ConfigError(f"unknown switch '{n}' (known: {', '.join(ctx.switches)})")
        infos = ctx.state.slot_infos()
        out: dict[str, Any] = {}
        for name in names:
            if name not in ctx.reachable():
                out[name] = {"reachable": False, "error": ctx.switches[name].last_error}
                continue
            sw = ctx.topology.switches[name]
            reqs = [ctx.codec.counter_request(c, i.slot) for i in infos
                    for c in (N.SLOT_SEEN_CTR, N.SLOT_DROPPED_CTR, N.SLOT_MARKED_CTR)]
            reqs += [ctx.codec.counter_request(c, N.stage_index(i.slot, pull)) for i in infos
                     for pull in (False, True) for c in (N.STAGE_SEEN_CTR, N.STAGE_DROPPED_CTR)]
            queues = [(p, q) for p in sorted(ctx.topology.ports(name)) for q in range(sw.priority_queues)]
            reqs += [ctx.codec.counter_request(c, N.queue_index(p, q)) for p, q in queues
                     for c in (N.QUEUE_TX_CTR, N.QUEUE_DROPPED_CTR, N.QUEUE_MARKED_CTR)]
            counts = ctx.counter_values(name, reqs)
            qrows = [{"port": p, "prio": q,
                      "tx": counts.get((N.QUEUE_TX_CTR, N.queue_index(p, q)), 0),
                      "dropped": counts.get((N.QUEUE_DROPPED_CTR, N.queue_index(p, q)), 0),
                      "marked": counts.get((N.QUEUE_MARKED_CTR, N.queue_index(p, q)), 0)}
                     for p, q in queues]
            out[name] = {"reachable": True, "classes": [_class_row(i, counts) for i in infos],
                         "queues": qrows}
        return out

    def pcn_table(self) -> list[dict[str, Any]]:
        """ECN/PCN thresholds and PCN counters per reachable switch port."""
        ctx = self.ctx
        out = []
        for name in ctx.switches:
            ports = sorted(ctx.topology.ports(name))
            row_base = {"switch": name}
            if name not in ctx.reachable():
                out.append({**row_base, "reachable": False, "error": ctx.switches[name].last_error})
                continue
            entries = {e.match[0][1].value: e for e in ctx.installed(name, (N.ECN_TABLE,))
                       if isinstance(e, TableEntry) and e.action is not None}
            reqs = [ctx.codec.counter_request(c, p) for p in ports
                    for c in (N.PCN_START_CTR, N.PCN_ARRIVAL_CTR, N.PCN_EXPIRED_CTR)]
            counts = ctx.counter_values(name, reqs)
            for p in ports:
                e = entries.get(p)
                out.append({**row_base, "reachable": True, "port": p,
                            "peer": ctx.topology.ports(name)[p],
                            "normal": e.action.param(N.SET_ECN_NORMAL) if e else None,
                            "pcn": e.action.param(N.SET_ECN_PCN) if e else None,
                            "starts": counts.get((N.PCN_START_CTR, p), 0),
                            "arrivals": counts.get((N.PCN_ARRIVAL_CTR, p), 0),
                            "expired": counts.get((N.PCN_EXPIRED_CTR, p), 0)})
        return out

    def switch_status(self) -> list[dict[str, Any]]:
        """Per switch: address, entities installed (None when unreachable), reachable, primary,
        pipeline loaded, reconnects, restarts seen (reconnects that found it empty) and the last
        time from stream lost to programmed, last error."""
        ctx = self.ctx
        out = []
        for name, ms in ctx.switches.items():
            entries = None
            if name in ctx.reachable():
                try:
                    entries = len(ctx.installed(name, NETWORK_TABLES + POLICY_TABLES, (N.ECMP_PROFILE,)))
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


def _class_row(info: SlotInfo, counts: dict[tuple[str, int], int]) -> dict[str, Any]:
    """One policy class of `gradctl stats`: its counters, and its loss against each bound."""
    seen = counts.get((N.SLOT_SEEN_CTR, info.slot), 0)
    dropped = counts.get((N.SLOT_DROPPED_CTR, info.slot), 0)
    loss = dropped / seen if seen else 0.0
    stages = {}
    for (stage, pull), bound in zip(STAGES, (info.loss_bound, info.pull_bound)):
        s_seen = counts.get((N.STAGE_SEEN_CTR, N.stage_index(info.slot, pull)), 0)
        s_dropped = counts.get((N.STAGE_DROPPED_CTR, N.stage_index(info.slot, pull)), 0)
        s_loss = s_dropped / s_seen if s_seen else 0.0
        stages[stage] = {"seen": s_seen, "dropped": s_dropped, "loss": s_loss,
                         "bound": bound, "within_bound": s_loss <= bound + 1e-12}
    return {"job": info.job_id, "name": info.job_name, "layers": list(info.layers),
            "mag_classes": list(info.mag_classes), "slot": info.slot,
            "priority": info.priority, "drop_eligible": info.drop_eligible,
            "seen": seen, "dropped": dropped,
            "marked": counts.get((N.SLOT_MARKED_CTR, info.slot), 0),
            "loss": loss, "bound": info.loss_bound, "pull_bound": info.pull_bound,
            **stages,
            "within_bound": all(st["within_bound"] for st in stages.values())}
