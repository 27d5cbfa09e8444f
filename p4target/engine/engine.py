"""The engine: one loaded v1model program, its runtime state API, and packet processing.

Runtime objects are addressed by their BMv2 JSON names (equal to p4c's P4Info names).
Table entry priorities follow BMv2: among matching ternary/range/optional entries the
entry with the *lowest* priority value wins (P4Runtime's "higher wins" must be mapped
by the caller, e.g. `bmv2_priority = 2**31 - 1 - p4runtime_priority`).
Meter rates follow BMv2's `meter_set_rates`: units per microsecond and burst in units.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from . import packet as pg
from .errors import (InvalidEntryError, NoProgramError, NoSuchHandleError, UnknownNameError)
from .externs import CounterArray, MeterArray, ParseValueSet, RegisterArray
from .match import MatchValue
from .loader import load_program
from .packet import PacketState
from .program import Program
from .tables import ActionProfile, Table, TableEntry
from .traffic_manager import TrafficManager

DigestCallback = Callable[[str, int, tuple], None]
TransmitCallback = Callable[[int, bytes], None]
LogCallback = Callable[[str], None]
_DATA_PATH_ERRORS = (IndexError, ZeroDivisionError, ValueError, OverflowError, TypeError, KeyError)
MAX_PASSES = 64  # resubmits + recirculations one packet may take (guards endless loops)


@dataclass
class MirrorSession:
    """A clone session: egress port (or multicast group) and truncation length (0 = none)."""
    session: int
    port: int | None
    truncate: int = 0
    mgrp: int | None = None


class Engine:
    """A v1model switch pipeline executing BMv2 JSON, with BMv2's runtime API by name.

    `process(port, data)` runs one packet synchronously and returns every (port, bytes)
    it produced; `start(transmit)` / `receive(port, data)` / `stop()` run it live with a
    per-port egress scheduler honouring queue rates and strict priority.
    """

    def __init__(self, bmv2_json: dict | None = None, *, priority_queues: int = 1,
                 queue_depth: int = 64, clock_us: Callable[[], float] | None = None,
                 log: LogCallback | None = None) -> None:
        self.program: Program | None = None
        self.priority_queues = max(1, min(8, priority_queues))
        start = time.monotonic()
        # BMv2 timestamps count microseconds since the switch started
        self.clock_us = clock_us or (lambda: (time.monotonic() - start) * 1e6)
        self._log_cb = log
        self._digest_cb: DigestCallback | None = None
        self.mc_groups: dict[int, list[int]] = {}
        self.mc_nodes: dict[int, tuple[int, list[int]]] = {}
        self._next_node = 0
        self.mirror_sessions: dict[int, MirrorSession] = {}
        self.tm = TrafficManager(self.priority_queues, queue_depth, size_of=_packet_length)
        self.lock = threading.RLock()
        self._live = None
        self.dropped = 0
        if bmv2_json is not None:
            self.load(bmv2_json)

    # -- program -------------------------------------------------------------------------
    def load(self, bmv2_json: dict) -> None:
        """Load (or replace) the program; all table/extern state starts empty."""
        prog = load_program(bmv2_json, self._log)
        with self.lock:
            self.program = prog
            self._meta_slots = [prog.field_index[(name, fname)]
                                for name, hid in prog.header_index.items() if hid in prog.metadata_headers
                                for fname, _, _ in prog.header_fields[name]]
            s = prog.sm
            self._sm = {name: s(name) for name in (
                "ingress_port", "egress_spec", "egress_port", "instance_type", "packet_length",
                "enq_timestamp", "enq_qdepth", "deq_timedelta", "deq_qdepth",
                "ingress_global_timestamp", "egress_global_timestamp", "mcast_grp", "egress_rid",
                "checksum_error", "parser_error", "priority", "qid")}
            sm = self._sm
            # egress's per-packet metadata writes, resolved once (None: the program lacks it)
            self._egress_slots = tuple(sm[n] for n in (
                "egress_port", "egress_spec", "egress_global_timestamp", "enq_timestamp", "enq_qdepth",
                "deq_qdepth", "deq_timedelta", "packet_length"))
            self._qid_slot = sm["qid"] if sm["priority"] is not None else None

    def _prog(self) -> Program:
        if self.program is None:
            raise NoProgramError("no P4 program is loaded")
        return self.program

    def _log(self, msg: str) -> None:
        if self._log_cb:
            self._log_cb(msg)

    # -- tables --------------------------------------------------------------------------
    def table(self, name: str) -> Table:
        """The runtime table object (read-only use: `.keys`, `.actions`, `.entries`)."""
        return _lookup(self._prog().tables, name, "table")

    def table_names(self) -> list[str]:
        return list(self._prog().tables)

    def table_add(self, table: str, key: Sequence[MatchValue], action: str | None = None,
                  action_data: Sequence[int] = (), priority: int | None = None, *,
                  member: int | None = None, group: int | None = None) -> int:
        """Add an entry; returns its handle. Indirect tables take `member=` or `group=`."""
        with self.lock:
            return self.table(table).add(key, action, action_data, priority, member, group)

    def table_modify(self, table: str, handle: int, action: str | None = None,
                     action_data: Sequence[int] = (), *, member: int | None = None,
                     group: int | None = None) -> None:
        with self.lock:
            self.table(table).modify(handle, action, action_data, member, group)

    def table_delete(self, table: str, handle: int) -> None:
        with self.lock:
            self.table(table).delete(handle)

    def table_clear(self, table: str) -> None:
        with self.lock:
            self.table(table).clear()

    def table_find(self, table: str, key: Sequence[MatchValue], priority: int | None = None) -> TableEntry | None:
        """The entry with exactly this key (and priority), or None."""
        return self.table(table).find(key, priority)

    def table_entries(self, table: str) -> list[TableEntry]:
        """All entries (in handle order); each has key, action, action_data, priority, counters."""
        t = self.table(table)
        return [t.entries[h] for h in sorted(t.entries)]

    def table_set_default(self, table: str, action: str, action_data: Sequence[int] = ()) -> None:
        with self.lock:
            self.table(table).set_default(action, action_data)

    def table_reset_default(self, table: str) -> None:
        with self.lock:
            self.table(table).reset_default()

    def table_get_default(self, table: str) -> tuple[str | None, tuple]:
        t = self.table(table)
        return t.default_action, t.default_data

    def table_entry_counter(self, table: str, handle: int) -> tuple[int, int]:
        """(packets, bytes) of an entry's direct counter."""
        e = self.table(table).get(handle)
        return e.packets, e.bytes

    def table_entry_counter_write(self, table: str, handle: int, packets: int, nbytes: int) -> None:
        e = self.table(table).get(handle)
        e.packets, e.bytes = packets, nbytes

    def table_entry_meter_set(self, table: str, handle: int, rates: list[tuple[float, int]]) -> None:
        """Configure an entry's direct meter: [(cir, cburst), (pir, pburst)] (BMv2 units)."""
        t = self.table(table)
        e = t.get(handle)
        if e.meter is None:
            raise InvalidEntryError(f"table '{table}' has no direct meter")
        e.meter.set_rates(rates, self.clock_us())

    def table_entry_meter_get(self, table: str, handle: int) -> list[tuple[float, int]] | None:
        e = self.table(table).get(handle)
        if e.meter is None:
            raise InvalidEntryError(f"table '{table}' has no direct meter")
        return e.meter.rates

    def direct_counter_table(self, counter: str) -> str:
        """The table a direct counter is bound to."""
        for c in self._prog().json.get("counter_arrays", []):
            if c["name"] == counter and c.get("is_direct"):
                return c["binding"]
        raise UnknownNameError(f"unknown direct counter '{counter}'")

    def direct_meter_table(self, meter: str) -> str:
        for m in self._prog().json.get("meter_arrays", []):
            if m["name"] == meter and m.get("is_direct"):
                return m["binding"]
        raise UnknownNameError(f"unknown direct meter '{meter}'")

    # -- action profiles -----------------------------------------------------------------
    def action_profile(self, name: str) -> ActionProfile:
        return _lookup(self._prog().profiles, name, "action profile")

    def act_prof_add_member(self, profile: str, action: str, action_data: Sequence[int] = ()) -> int:
        with self.lock:
            return self.action_profile(profile).add_member(action, action_data)

    def act_prof_modify_member(self, profile: str, member: int, action: str, action_data: Sequence[int] = ()) -> None:
        with self.lock:
            self.action_profile(profile).modify_member(member, action, action_data)

    def act_prof_delete_member(self, profile: str, member: int) -> None:
        with self.lock:
            self.action_profile(profile).delete_member(member)

    def act_prof_create_group(self, profile: str) -> int:
        with self.lock:
            return self.action_profile(profile).create_group()

    def act_prof_delete_group(self, profile: str, group: int) -> None:
        with self.lock:
            self.action_profile(profile).delete_group(group)

    def act_prof_add_member_to_group(self, profile: str, member: int, group: int) -> None:
        with self.lock:
            self.action_profile(profile).add_member_to_group(member, group)

    def act_prof_remove_member_from_group(self, profile: str, member: int, group: int) -> None:
        with self.lock:
            self.action_profile(profile).remove_member_from_group(member, group)

    # -- counters, meters, registers -----------------------------------------------------
    def counter(self, name: str) -> CounterArray:
        return _lookup(self._prog().counters, name, "counter")

    def counter_read(self, name: str, index: int) -> tuple[int, int]:
        """(packets, bytes) of an indirect counter cell."""
        return self.counter(name).read(index)

    def counter_write(self, name: str, index: int, packets: int, nbytes: int) -> None:
        self.counter(name).write(index, packets, nbytes)

    def counter_reset(self, name: str) -> None:
        self.counter(name).reset()

    def meter(self, name: str) -> MeterArray:
        return _lookup(self._prog().meters, name, "meter")

    def meter_set_rates(self, name: str, index: int, rates: list[tuple[float, int]]) -> None:
        """[(cir, cburst), (pir, pburst)], rates in units per microsecond (BMv2)."""
        self.meter(name).cell(index).set_rates(rates, self.clock_us())

    def meter_get_rates(self, name: str, index: int) -> list[tuple[float, int]] | None:
        return self.meter(name).cell(index).rates

    def meter_reset_rates(self, name: str, index: int) -> None:
        self.meter(name).cell(index).reset()

    def register(self, name: str) -> RegisterArray:
        return _lookup(self._prog().registers, name, "register")

    def register_read(self, name: str, index: int) -> int:
        return self.register(name).read(index)

    def register_write(self, name: str, index: int, value: int) -> None:
        self.register(name).write(index, value)

    def register_reset(self, name: str) -> None:
        self.register(name).reset()

    # -- parser value sets ---------------------------------------------------------------
    def parse_vset(self, name: str) -> ParseValueSet:
        return _lookup(self._prog().value_sets, name, "parser value set")

    def parse_vset_add(self, name: str, value: int) -> None:
        """Add a value (the select key's components concatenated without padding)."""
        with self.lock:
            self.parse_vset(name).add(value)

    def parse_vset_remove(self, name: str, value: int) -> None:
        with self.lock:
            self.parse_vset(name).remove(value)

    def parse_vset_get(self, name: str) -> list[int]:
        return list(self.parse_vset(name).values)

    def parse_vset_clear(self, name: str) -> None:
        with self.lock:
            self.parse_vset(name).clear()

    # -- packet replication engine (multicast) -------------------------------------------
    def mc_mgrp_create(self, mgrp: int) -> None:
        if mgrp in self.mc_groups:
            raise InvalidEntryError(f"multicast group {mgrp} already exists")
        self.mc_groups[mgrp] = []

    def mc_mgrp_destroy(self, mgrp: int) -> None:
        if self.mc_groups.pop(mgrp, None) is None:
            raise NoSuchHandleError(f"no multicast group {mgrp}")

    def mc_node_create(self, rid: int, ports: Sequence[int]) -> int:
        """A replication node (rid, ports); returns its handle."""
        handle = self._next_node
        self._next_node += 1
        self.mc_nodes[handle] = (rid, list(ports))
        return handle

    def mc_node_update(self, node: int, ports: Sequence[int]) -> None:
        rid, _ = self._node(node)
        self.mc_nodes[node] = (rid, list(ports))

    def mc_node_destroy(self, node: int) -> None:
        self._node(node)
        for nodes in self.mc_groups.values():
            if node in nodes:
                nodes.remove(node)
        del self.mc_nodes[node]

    def mc_node_associate(self, mgrp: int, node: int) -> None:
        self._node(node)
        if mgrp not in self.mc_groups:
            raise NoSuchHandleError(f"no multicast group {mgrp}")
        if node not in self.mc_groups[mgrp]:
            self.mc_groups[mgrp].append(node)

    def mc_node_dissociate(self, mgrp: int, node: int) -> None:
        if node not in self.mc_groups.get(mgrp, []):
            raise NoSuchHandleError(f"node {node} is not in multicast group {mgrp}")
        self.mc_groups[mgrp].remove(node)

    def mc_group_set(self, mgrp: int, replicas: Sequence[tuple[int, int]]) -> None:
        """Replace a group's replicas with (port, rid) pairs (P4Runtime style); creates it if needed."""
        for node in self.mc_groups.pop(mgrp, []):
            self.mc_nodes.pop(node, None)
        self.mc_groups[mgrp] = []
        by_rid: dict[int, list[int]] = {}
        for port, rid in replicas:
            by_rid.setdefault(rid, []).append(port)
        for rid, ports in by_rid.items():
            self.mc_node_associate(mgrp, self.mc_node_create(rid, ports))

    def mc_group_replicas(self, mgrp: int) -> list[tuple[int, int]]:
        if mgrp not in self.mc_groups:
            raise NoSuchHandleError(f"no multicast group {mgrp}")
        return [(port, self.mc_nodes[n][0]) for n in self.mc_groups[mgrp] for port in self.mc_nodes[n][1]]

    def _node(self, node: int) -> tuple[int, list[int]]:
        if node not in self.mc_nodes:
            raise NoSuchHandleError(f"no multicast node {node}")
        return self.mc_nodes[node]

    # -- mirroring -----------------------------------------------------------------------
    def mirroring_add(self, session: int, port: int | None = None, truncate: int = 0,
                      mgrp: int | None = None) -> None:
        """Create or replace clone session `session` towards `port` (or multicast `mgrp`)."""
        if port is None and mgrp is None:
            raise InvalidEntryError("a mirroring session needs a port or a multicast group")
        self.mirror_sessions[session] = MirrorSession(session, port, truncate, mgrp)

    def mirroring_delete(self, session: int) -> None:
        if self.mirror_sessions.pop(session, None) is None:
            raise NoSuchHandleError(f"no mirroring session {session}")

    def mirroring_get(self, session: int) -> MirrorSession:
        if session not in self.mirror_sessions:
            raise NoSuchHandleError(f"no mirroring session {session}")
        return self.mirror_sessions[session]

    # -- traffic manager -----------------------------------------------------------------
    def set_queue_rate(self, pps: float | None, port: int | None = None, priority: int | None = None) -> None:
        """Egress queue rate in packets/s (None = unlimited), as BMv2: for one (port, priority)
        queue, or each queue of a port, or every queue."""
        self.tm.set_rate(pps, port, priority)

    def set_port_rate(self, pps: float | None, port: int) -> None:
        """Extension: shape a whole egress port (all its queues together) to `pps` packets/s."""
        self.tm.set_port_rate(pps, port)

    def set_port_byte_rate(self, bytes_per_s: float | None, port: int) -> None:
        """Extension: shape a whole egress port to `bytes_per_s` bytes/s (None = off)."""
        self.tm.set_port_byte_rate(bytes_per_s, port)

    def set_queue_depth(self, depth: int, port: int | None = None, priority: int | None = None) -> None:
        """Egress queue capacity in packets for one port/priority or all."""
        self.tm.set_depth(depth, port, priority)

    # -- digests and logs ----------------------------------------------------------------
    def set_digest_callback(self, cb: DigestCallback | None) -> None:
        """cb(learn_list_name, learn_list_id, field_values) at the end of ingress."""
        self._digest_cb = cb

    def set_log_callback(self, cb: LogCallback | None) -> None:
        self._log_cb = cb

    # -- packet processing ---------------------------------------------------------------
    def process(self, port: int, data: bytes) -> list[tuple[int, bytes]]:
        """Run one packet through the whole switch synchronously; returns (port, bytes) outputs."""
        out: list[tuple[int, bytes]] = []
        with self.lock:
            live, self._live = self._live, None  # even on a live engine: outputs returned, not sent
            try:
                self._ingress(port, data, self._new_packet(port, data, pg.NORMAL))
                self.tm.drain(self._egress_done(out), self.clock_us)
            finally:
                self._live = live
        return out

    def packet_out(self, port: int, data: bytes) -> list[tuple[int, bytes]]:
        """Inject a packet (e.g. P4Runtime packet-out on the CPU port); same as `process`/`receive`."""
        if self._live is not None:
            self.receive(port, data)
            return []
        return self.process(port, data)

    def start(self, transmit: TransmitCallback) -> None:
        """Live mode: `transmit(port, bytes)` is called for each packet leaving the switch;
        feed packets with `receive`. Call after `lock` has its final value."""
        self._transmit = transmit
        self._live = True
        self.tm.start(self._egress_live, self.clock_us, self.lock)

    def receive(self, port: int, data: bytes) -> None:
        """Live mode: run ingress, then egress and `transmit` for every packet its queue's rate
        lets go now, all on the caller's thread; rate-held packets leave from the scheduler."""
        with self.lock:
            self._ingress(port, data, self._new_packet(port, data, pg.NORMAL))
            if self.tm.pending:
                self.tm.serve()

    def stop(self) -> None:
        self.tm.stop()
        with self.lock:
            self._live = None

    def _egress_live(self, port: int, P: PacketState, enq_us: float, enq_depth: int, deq_depth: int) -> None:
        # called by the traffic manager with `lock` held
        out: list[tuple[int, bytes]] = []
        self._egress(port, P, enq_us, enq_depth, deq_depth, out)
        for p, d in out:
            self._transmit(p, d)

    def _egress_done(self, out: list):
        def done(port: int, P: PacketState, enq_us: float, enq_depth: int, deq_depth: int) -> None:
            self._egress(port, P, enq_us, enq_depth, deq_depth, out)
        return done

    def _new_packet(self, port: int, data: bytes, instance_type: int) -> PacketState:
        prog = self._prog()
        P = prog.new_state()
        P.data = data
        P.orig = data
        P.length = P.length_reg = len(data)
        sm = self._sm
        F = P.F
        if sm["ingress_port"] is not None:
            F[sm["ingress_port"]] = port
        if sm["instance_type"] is not None:
            F[sm["instance_type"]] = instance_type
        if sm["packet_length"] is not None:
            F[sm["packet_length"]] = len(data)
        return P

    def _copy_fields(self, fl: int | None, src: PacketState, dst: PacketState) -> None:
        if fl is None:
            return
        for i in self.program.field_lists.get(fl, []):
            dst.F[i] = src.F[i]

    def _ingress(self, port: int, data: bytes, P: PacketState) -> None:
        prog = self.program
        sm = self._sm
        F = P.F
        P.now_us = now = self.clock_us()
        # BMv2 stamps packets as they arrive; resubmitted and recirculated ones keep the reset
        # (zero) value unless their field list preserves it
        if sm["ingress_global_timestamp"] is not None and P.passes == 0:
            F[sm["ingress_global_timestamp"]] = int(now)
        try:
            prog.parser(P)
            prog.verify_checksums(P)
            prog.ingress(P)
        except pg.AssertFailure as exc:
            self._log(f"{exc.args[0]} failed in ingress; packet dropped")
            return
        except _DATA_PATH_ERRORS as exc:  # e.g. a runtime stack index beyond the stack
            self._log(f"ingress aborted ({type(exc).__name__}: {exc}); packet dropped")
            self.dropped += 1
            return
        self._flush_logs(P)
        # end of ingress, in BMv2's order: clone, digest, resubmit, multicast, drop, unicast
        if P.clone is not None:
            session, fl = P.clone
            ms = self.mirror_sessions.get(session)
            if ms is not None:
                # BMv2 parses the received bytes again (with ingress_port set, as the parser
                # may branch on it), then resets all metadata and copies the preserved fields
                C = self._new_packet(port, P.orig, pg.INGRESS_CLONE)
                C.now_us = now
                prog.parser(C)
                self._reset_metadata(C)
                self._copy_fields(fl, P, C)
                self._set_instance(C, pg.INGRESS_CLONE)
                self._to_mirror(ms, C)
        if P.digests and self._digest_cb is not None:
            for lid in P.digests:
                name, fields = prog.learn_lists.get(lid, (str(lid), []))
                self._digest_cb(name, lid, tuple(F[i] for i in fields))
        if P.resubmit:  # simple_switch: a field list id of 0 requests nothing
            if P.passes < MAX_PASSES:
                # BMv2 resets all metadata (ingress_port included) but the preserved fields
                R = self._new_packet(0, P.orig, pg.RESUBMIT)
                R.passes = P.passes + 1
                self._copy_fields(P.resubmit, P, R)
                self._set_instance(R, pg.RESUBMIT)
                self._ingress(0, P.orig, R)
            return
        mg = sm["mcast_grp"]
        if mg is not None and F[mg]:
            self._set_instance(P, pg.REPLICATION)
            self._multicast(F[mg], P)
            return
        spec = F[sm["egress_spec"]] if sm["egress_spec"] is not None else pg.DROP_PORT
        if spec == pg.DROP_PORT:
            self.dropped += 1
            return
        self._set_instance(P, pg.NORMAL)
        self._enqueue(spec, P)

    def _set_instance(self, P: PacketState, instance_type: int) -> None:
        if self._sm["instance_type"] is not None:
            P.F[self._sm["instance_type"]] = instance_type

    def _multicast(self, mgrp: int, P: PacketState) -> None:
        nodes = self.mc_groups.get(mgrp)
        if not nodes:
            return
        sm = self._sm
        for n in nodes:
            rid, ports = self.mc_nodes[n]
            for port in ports:
                C = P.copy()
                C.clone = C.resubmit = C.recirc = None
                if sm["egress_rid"] is not None:
                    C.F[sm["egress_rid"]] = rid
                self._enqueue(port, C)

    def _to_mirror(self, ms: MirrorSession, C: PacketState) -> None:
        if ms.truncate:
            C.truncate = ms.truncate
        if ms.mgrp:
            self._multicast(ms.mgrp, C)
        if ms.port is not None:
            self._enqueue(ms.port, C)

    def _enqueue(self, port: int, P: PacketState) -> None:
        pri_idx = self._sm["priority"]
        pri = P.F[pri_idx] if pri_idx is not None else 0
        now = self.clock_us()
        if self._live and self.tm.passes_through(port, pri):
            # live, unshaped and nothing waiting: what enqueue + an immediate dequeue would do
            self._egress_live(port, P, now, 0, 0)
        elif not self.tm.enqueue(port, pri, P, now):
            self.dropped += 1

    def _egress(self, port: int, P: PacketState, enq_us: float, enq_depth: int, deq_depth: int,
                out: list) -> None:
        prog = self.program
        sm = self._sm
        F = P.F
        now = self.clock_us()
        P.now_us = now
        eport, espec, egts, enqts, enqd, deqd, deqdt, plen = self._egress_slots
        if eport is not None:
            F[eport] = port
        if espec is not None:
            F[espec] = 0
        if egts is not None:
            F[egts] = int(now)
        if enqts is not None:
            F[enqts] = int(enq_us)
        if enqd is not None:
            F[enqd] = enq_depth
        if deqd is not None:
            F[deqd] = deq_depth
        if deqdt is not None:
            F[deqdt] = int(now - enq_us)
        if self._qid_slot is not None:
            F[self._qid_slot] = F[sm["priority"]]
        if plen is not None:
            F[plen] = P.length_reg
        P.clone = None
        try:
            prog.egress(P)
        except pg.AssertFailure as exc:
            self._log(f"{exc.args[0]} failed in egress; packet dropped")
            return
        except _DATA_PATH_ERRORS as exc:
            self._log(f"egress aborted ({type(exc).__name__}: {exc}); packet dropped")
            self.dropped += 1
            return
        self._flush_logs(P)
        if P.clone is not None:
            session, fl = P.clone
            ms = self.mirror_sessions.get(session)
            if ms is not None:
                C = P.copy()
                C.clone = None
                # metadata is reset except the preserved fields
                saved = {i: F[i] for i in prog.field_lists.get(fl, [])}
                self._reset_metadata(C)
                for i, v in saved.items():
                    C.F[i] = v
                if sm["instance_type"] is not None:
                    C.F[sm["instance_type"]] = pg.EGRESS_CLONE
                self._to_mirror(ms, C)
        if sm["egress_spec"] is not None and F[sm["egress_spec"]] == pg.DROP_PORT:
            self.dropped += 1
            return
        try:
            prog.update_checksums(P)
            data = prog.deparser(P)
        except _DATA_PATH_ERRORS as exc:
            self._log(f"deparser aborted ({type(exc).__name__}: {exc}); packet dropped")
            self.dropped += 1
            return
        if P.truncate and len(data) > P.truncate:
            data = data[:P.truncate]
        if P.recirc:
            if P.passes < MAX_PASSES:
                # metadata reset (ingress_port included) except the preserved fields
                R = self._new_packet(0, data, pg.RECIRC)
                R.passes = P.passes + 1
                self._copy_fields(P.recirc, P, R)
                self._set_instance(R, pg.RECIRC)
                self._ingress(0, data, R)
            return
        out.append((port, data))

    def _reset_metadata(self, P: PacketState) -> None:
        F = P.F
        for i in self._meta_slots:
            F[i] = 0

    def _flush_logs(self, P: PacketState) -> None:
        if P.logs:
            for fmt, vals in P.logs:
                try:
                    msg = fmt.format(*vals)
                except (IndexError, KeyError, ValueError):
                    msg = f"{fmt} {vals}"
                self._log(msg)
            P.logs = None


def _lookup(objects: dict, name: str, kind: str) -> Any:
    """objects[name], or UnknownNameError naming the kind of object."""
    obj = objects.get(name)
    if obj is None:
        raise UnknownNameError(f"unknown {kind} '{name}'")
    return obj


def _packet_length(P: PacketState) -> int:
    """A queued packet's cost to a byte-shaped port: its length as received."""
    return P.length
