"""Write and Read dispatch: each entity kind to the module that handles it."""
from __future__ import annotations

from typing import Iterator

from p4.v1 import p4runtime_pb2

from .digests import DigestDispatcher
from .errors import invalid, unimplemented
from .externs import Externs
from .profiles import ActionProfiles
from .replication import Replication
from .state import PipelineState
from .tables import TableEntries
from .value_sets import ValueSets


class Entities:
    """Entity handlers bound to one pipeline's state."""

    def __init__(self, state: PipelineState, digests: DigestDispatcher) -> None:
        self.state = state
        self.tables = TableEntries(state)
        self.profiles = ActionProfiles(state)
        self.externs = Externs(state)
        self.replication = Replication(state)
        self.value_sets = ValueSets(state)
        self.digests = digests

    def write(self, update: p4runtime_pb2.Update) -> None:
        """Apply one update (raises P4RuntimeError or an engine error on failure)."""
        op, e = update.type, update.entity
        if op not in (p4runtime_pb2.Update.INSERT, p4runtime_pb2.Update.MODIFY, p4runtime_pb2.Update.DELETE):
            raise invalid("update type must be INSERT, MODIFY or DELETE")
        kind = e.WhichOneof("entity")
        if kind == "table_entry":
            self.tables.write(op, e.table_entry)
        elif kind == "action_profile_member":
            self.profiles.write_member(op, e.action_profile_member)
        elif kind == "action_profile_group":
            self.profiles.write_group(op, e.action_profile_group)
        elif kind == "counter_entry":
            self.externs.write_counter(op, e.counter_entry)
        elif kind == "direct_counter_entry":
            self.tables.write_direct_counter(op, e.direct_counter_entry)
        elif kind == "meter_entry":
            self.externs.write_meter(op, e.meter_entry)
        elif kind == "direct_meter_entry":
            self.tables.write_direct_meter(op, e.direct_meter_entry)
        elif kind == "register_entry":
            self.externs.write_register(op, e.register_entry)
        elif kind == "packet_replication_engine_entry":
            self.replication.write(op, e.packet_replication_engine_entry)
        elif kind == "digest_entry":
            self.digests.write(op, e.digest_entry)
        elif kind == "value_set_entry":
            self.value_sets.write(op, e.value_set_entry)
        elif kind is None:
            raise invalid("update has no entity")
        else:
            raise unimplemented(f"{kind} entities are not supported")

    def read(self, e: p4runtime_pb2.Entity) -> Iterator[p4runtime_pb2.Entity]:
        """The entities one (possibly wildcard) read request entity selects."""
        kind = e.WhichOneof("entity")
        if kind == "table_entry":
            return self.tables.read(e.table_entry)
        if kind == "action_profile_member":
            return self.profiles.read_members(e.action_profile_member)
        if kind == "action_profile_group":
            return self.profiles.read_groups(e.action_profile_group)
        if kind == "counter_entry":
            return self.externs.read_counters(e.counter_entry)
        if kind == "direct_counter_entry":
            return self.tables.read_direct("counter", e.direct_counter_entry.table_entry)
        if kind == "meter_entry":
            return self.externs.read_meters(e.meter_entry)
        if kind == "direct_meter_entry":
            return self.tables.read_direct("meter", e.direct_meter_entry.table_entry)
        if kind == "register_entry":
            return self.externs.read_registers(e.register_entry)
        if kind == "packet_replication_engine_entry":
            return self.replication.read(e.packet_replication_engine_entry)
        if kind == "digest_entry":
            return self.digests.read(e.digest_entry)
        if kind == "value_set_entry":
            return self.value_sets.read(e.value_set_entry)
        if kind is None:
            raise invalid("read request entity is empty")
        raise unimplemented(f"{kind} entities are not supported")
