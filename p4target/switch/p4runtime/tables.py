"""Table entries (incl. default entries) and their direct counters and meters."""
from __future__ import annotations

from typing import Iterator

from p4.v1 import p4runtime_pb2

from p4target.engine import TableEntry as EngineEntry
from p4target.engine import Valid

from .errors import Code, P4RuntimeError, invalid, not_found, unimplemented
from .meters import config_from_engine, config_to_engine
from .state import EntryExtras, PipelineState
from .translate import TableInfo

Update = p4runtime_pb2.Update


class TableEntries:
    """Write and read `TableEntry`, `DirectCounterEntry` and `DirectMeterEntry` entities."""

    def __init__(self, state: PipelineState) -> None:
        self.s = state
        self.tr = state.translator
        self.engine = state.engine

    # -- write ---------------------------------------------------------------------------
    def write(self, op: int, te: p4runtime_pb2.TableEntry) -> None:
        table = self.tr.table(te.table_id)
        if te.is_default_action:
            self._write_default(op, table, te)
            return
        if table.is_const:
            raise P4RuntimeError(Code.PERMISSION_DENIED, f"table '{table.name}' is const")
        if te.idle_timeout_ns and not table.supports_idle_timeout:
            raise invalid(f"table '{table.name}' does not support idle timeout")
        key = self.tr.key_to_engine(table, te.match)
        priority = self.tr.priority_to_engine(table, te.priority)
        if op == Update.INSERT:
            self.tr.check_key_widths(table)
            # the engine finds duplicates itself, except in exact tables (checked here by hash)
            if self.engine.table(table.name).match_type == "exact" and self._find(table, key, priority) is not None:
                raise P4RuntimeError(Code.ALREADY_EXISTS, f"table '{table.name}' already has an entry with this key")
            self._insert(table, te, key, priority)
            return
        entry = self._find(table, key, priority)
        if entry is None:
            raise not_found(f"table '{table.name}' has no entry with this key")
        if op == Update.MODIFY:
            self._modify(table, te, entry)
        elif op == Update.DELETE:
            ref = self._ref_of(table, entry)
            self.engine.table_delete(table.name, entry.handle)
            self._release(ref)
            self.s.extras.pop((table.name, entry.handle), None)
        else:
            raise invalid("update type must be INSERT, MODIFY or DELETE")

    def _find(self, table: TableInfo, key: list, priority: int | None) -> EngineEntry | None:
        """The entry with exactly this key (and priority); exact-only tables by hash."""
        et = self.engine.table(table.name)
        if et.match_type == "exact":
            return et.lookup(tuple(int(v.valid) if isinstance(v, Valid) else v.value for v in key))
        return self.engine.table_find(table.name, key, priority)

    def _insert(self, table: TableInfo, te, key, priority) -> None:
        target = self._target(table, te)
        rates = self._check_direct_resources(table, te)
        handle = self.engine.table_add(table.name, key, target.get("action"), target.get("data", ()), priority,
                                       member=target.get("member"), group=target.get("group"))
        self._acquire(target.get("ref"))
        self.s.extras[(table.name, handle)] = EntryExtras(te.controller_metadata, te.metadata, te.idle_timeout_ns)
        self._apply_direct_resources(table, te, handle, rates)

    def _modify(self, table: TableInfo, te, entry: EngineEntry) -> None:
        target = self._target(table, te)
        rates = self._check_direct_resources(table, te)
        old_ref = self._ref_of(table, entry)
        self.engine.table_modify(table.name, entry.handle, target.get("action"), target.get("data", ()),
                                 member=target.get("member"), group=target.get("group"))
        self._release(old_ref)
        self._acquire(target.get("ref"))
        self.s.extras[(table.name, entry.handle)] = EntryExtras(te.controller_metadata, te.metadata,
                                                                te.idle_timeout_ns)
        self._apply_direct_resources(table, te, entry.handle, rates, modify=True)

    def _target(self, table: TableInfo, te) -> dict:
        """Engine arguments of the entry's action: action+data, or member/group handle."""
        which = te.action.WhichOneof("type")
        if which is None:
            raise invalid(f"table '{table.name}': the entry has no action")
        if which == "action":
            if table.profile_id:
                raise invalid(f"table '{table.name}' is indirect: use an action profile member or group")
            self.tr.check_table_action(table, te.action.action.action_id, default=False)
            name, data = self.tr.action_to_engine(te.action.action)
            return {"action": name, "data": data}
        if which == "action_profile_action_set":
            raise unimplemented("one-shot action selector programming is not supported")
        if not table.profile_id:
            raise invalid(f"table '{table.name}' is direct: it takes an action, not a member or group")
        ids = self.s.profiles[table.profile_id]
        if which == "action_profile_member_id":
            mid = te.action.action_profile_member_id
            if mid not in ids.members:
                raise not_found(f"no member {mid} in action profile '{self.tr.profiles[table.profile_id].name}'")
            return {"member": ids.members[mid], "ref": (table.profile_id, "member", mid)}
        gid = te.action.action_profile_group_id
        if not self.tr.profiles[table.profile_id].with_selector:
            raise invalid(f"action profile of '{table.name}' has no selector: groups not allowed")
        if gid not in ids.groups:
            raise not_found(f"no group {gid} in action profile '{self.tr.profiles[table.profile_id].name}'")
        return {"group": ids.groups[gid], "ref": (table.profile_id, "group", gid)}

    def _acquire(self, ref: tuple | None) -> None:
        if ref is not None:
            self.s.refs[ref] += 1

    def _ref_of(self, table: TableInfo, entry: EngineEntry) -> tuple | None:
        """(profile id, "member"|"group", id) an indirect entry points at, if known."""
        if not table.profile_id:
            return None
        ids = self.s.profiles[table.profile_id]
        if entry.member is not None and entry.member in ids.member_ids:
            return (table.profile_id, "member", ids.member_ids[entry.member])
        if entry.group is not None and entry.group in ids.group_ids:
            return (table.profile_id, "group", ids.group_ids[entry.group])
        return None

    def _release(self, ref: tuple | None) -> None:
        if ref is None:
            return
        self.s.refs[ref] -= 1
        if self.s.refs[ref] <= 0:
            del self.s.refs[ref]

    def _check_direct_resources(self, table: TableInfo, te) -> list[tuple[float, int]] | None:
        """Validate the entry's direct counter data / meter config; the meter rates (engine units)."""
        if te.HasField("counter_data") and not table.direct_counter_id:
            raise invalid(f"table '{table.name}' has no direct counter")
        if te.HasField("meter_config"):
            if not table.direct_meter_id:
                raise invalid(f"table '{table.name}' has no direct meter")
            return config_to_engine(te.meter_config)
        return None

    def _apply_direct_resources(self, table: TableInfo, te, handle: int, rates, modify: bool = False) -> None:
        if te.HasField("counter_data"):
            self.engine.table_entry_counter_write(table.name, handle, te.counter_data.packet_count,
                                                  te.counter_data.byte_count)
        if rates is not None:
            self.engine.table_entry_meter_set(table.name, handle, rates)
        elif modify and table.direct_meter_id:
            # P4Runtime: a MODIFY without meter_config resets the direct meter to its default
            meter = self.engine.table(table.name).get(handle).meter
            if meter is not None:
                meter.reset()

    def _write_default(self, op: int, table: TableInfo, te) -> None:
        if op != Update.MODIFY:
            raise invalid(f"table '{table.name}': the default entry can only be modified")
        if te.match or te.priority:
            raise invalid(f"table '{table.name}': a default entry has no match key or priority")
        if table.const_default_action_id:
            raise P4RuntimeError(Code.PERMISSION_DENIED, f"table '{table.name}' has a const default action")
        if table.profile_id:
            raise unimplemented(f"default entries of indirect table '{table.name}' are not supported")
        if not te.HasField("action"):
            self.engine.table_reset_default(table.name)
            return
        if te.action.WhichOneof("type") != "action":
            raise invalid(f"table '{table.name}': the default entry needs a direct action")
        self.tr.check_table_action(table, te.action.action.action_id, default=True)
        name, data = self.tr.action_to_engine(te.action.action)
        self.engine.table_set_default(table.name, name, data)

    # -- read ----------------------------------------------------------------------------
    def read(self, te: p4runtime_pb2.TableEntry) -> Iterator[p4runtime_pb2.Entity]:
        tables = [self.tr.table(te.table_id)] if te.table_id else list(self.tr.tables.values())
        for table in tables:
            if te.is_default_action:
                yield self._default_entity(table)
                continue
            counters, meters = te.HasField("counter_data"), te.HasField("meter_config")
            for entry in self._matching(table, te):
                ent = p4runtime_pb2.Entity()
                self._fill_entry(table, entry, counters, meters, ent.table_entry)
                yield ent

    def _matching(self, table: TableInfo, te) -> list[EngineEntry]:
        if te.match:
            key = self.tr.key_to_engine(table, te.match)
            priority = self.tr.priority_to_engine(table, te.priority) if te.priority or not table.needs_priority else None
            e = self._find(table, key, priority)
            return [e] if e is not None else []
        entries = self.engine.table_entries(table.name)
        if te.priority:
            entries = [e for e in entries if self.tr.priority_from_engine(table, e.priority) == te.priority]
        return entries

    def _fill_entry(self, table: TableInfo, entry: EngineEntry, counters: bool, meters: bool,
                    out: p4runtime_pb2.TableEntry) -> None:
        """Fill `out` (in place: pure-Python protobuf copies are slow) from an engine entry."""
        out.table_id = table.id
        if table.is_const:
            out.is_const = True
        if table.needs_priority:
            out.priority = self.tr.priority_from_engine(table, entry.priority)
        self.tr.key_from_engine(table, entry.key, out.match)
        if entry.member is not None or entry.group is not None:
            ids = self.s.profiles.get(table.profile_id)
            if entry.member is not None:
                out.action.action_profile_member_id = ids.member_ids.get(entry.member, entry.member) if ids else entry.member
            else:
                out.action.action_profile_group_id = ids.group_ids.get(entry.group, entry.group) if ids else entry.group
        elif entry.action is not None:
            self.tr.action_from_engine(entry.action, entry.action_data, out.action.action)
        extras = self.s.extras.get((table.name, entry.handle))
        if extras is not None:
            if extras.controller_metadata:
                out.controller_metadata = extras.controller_metadata
            if extras.metadata:
                out.metadata = extras.metadata
            if extras.idle_timeout_ns:
                out.idle_timeout_ns = extras.idle_timeout_ns
        if counters and table.direct_counter_id:
            out.counter_data.packet_count, out.counter_data.byte_count = entry.packets, entry.bytes
        if meters and table.direct_meter_id and entry.meter is not None and entry.meter.rates is not None:
            out.meter_config.CopyFrom(config_from_engine(entry.meter.rates))

    def _default_entity(self, table: TableInfo) -> p4runtime_pb2.Entity:
        out = p4runtime_pb2.TableEntry(table_id=table.id, is_default_action=True)
        if table.const_default_action_id:
            out.is_const = True
        name, data = self.engine.table_get_default(table.name)
        if name is not None:
            self.tr.action_from_engine(name, data, out.action.action)
        return p4runtime_pb2.Entity(table_entry=out)

    # -- direct counters and meters ------------------------------------------------------
    def write_direct_counter(self, op: int, dce: p4runtime_pb2.DirectCounterEntry) -> None:
        if op != Update.MODIFY:
            raise invalid("direct counter entries can only be modified")
        table, entry = self._direct_target(dce.table_entry, "counter")
        self.engine.table_entry_counter_write(table.name, entry.handle, dce.data.packet_count, dce.data.byte_count)

    def write_direct_meter(self, op: int, dme: p4runtime_pb2.DirectMeterEntry) -> None:
        if op != Update.MODIFY:
            raise invalid("direct meter entries can only be modified")
        table, entry = self._direct_target(dme.table_entry, "meter")
        if dme.HasField("config"):
            self.engine.table_entry_meter_set(table.name, entry.handle, config_to_engine(dme.config))
        else:
            entry.meter.reset()

    def _direct_target(self, te, kind: str) -> tuple[TableInfo, EngineEntry]:
        table = self.tr.table(te.table_id)
        if not (table.direct_counter_id if kind == "counter" else table.direct_meter_id):
            raise invalid(f"table '{table.name}' has no direct {kind}")
        if te.is_default_action:
            raise unimplemented(f"direct {kind}s of default entries are not supported")
        key = self.tr.key_to_engine(table, te.match)
        entry = self._find(table, key, self.tr.priority_to_engine(table, te.priority))
        if entry is None:
            raise not_found(f"table '{table.name}' has no entry with this key")
        return table, entry

    def read_direct(self, kind: str, te: p4runtime_pb2.TableEntry) -> Iterator[p4runtime_pb2.Entity]:
        """DirectCounterEntry / DirectMeterEntry of the entries `te` selects (table id 0: all)."""
        attr = "direct_counter_id" if kind == "counter" else "direct_meter_id"
        if te.table_id:
            table = self.tr.table(te.table_id)
            if not getattr(table, attr):
                raise invalid(f"table '{table.name}' has no direct {kind}")
            tables = [table]
        else:
            tables = [t for t in self.tr.tables.values() if getattr(t, attr)]
        for table in tables:
            for entry in self._matching(table, te):
                ent = p4runtime_pb2.Entity()
                if kind == "counter":
                    dce = ent.direct_counter_entry
                    self._fill_entry(table, entry, False, False, dce.table_entry)
                    dce.data.packet_count, dce.data.byte_count = entry.packets, entry.bytes
                else:
                    dme = ent.direct_meter_entry
                    self._fill_entry(table, entry, False, False, dme.table_entry)
                    if entry.meter is not None and entry.meter.rates is not None:
                        dme.config.CopyFrom(config_from_engine(entry.meter.rates))
                yield ent
