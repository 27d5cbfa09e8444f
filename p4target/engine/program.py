"""A loaded program: PHV layout, compiled stages and the runtime objects they use.

`loader.load_program()` builds one from BMv2 JSON."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from .externs import CounterArray, MeterArray, ParseValueSet, RegisterArray
from .packet import PacketState
from .tables import ActionProfile, ActionSpec, Table


# The names simple_switch reads and writes its per-packet metadata under (simple_switch.cpp).
# `standard_metadata.*` must be fields of the header instance `standard_metadata`; the others
# exist when a header instance of that name has the field or when the JSON's `field_aliases`
# map the name onto a field (p4c's v1model.p4 aliases them to standard_metadata with @alias).
SIMPLE_SWITCH_FIELDS = {
    **{n: "standard_metadata" for n in ("ingress_port", "egress_spec", "egress_port", "instance_type",
                                        "packet_length", "checksum_error", "parser_error")},
    **{n: "intrinsic_metadata" for n in ("ingress_global_timestamp", "egress_global_timestamp", "mcast_grp",
                                         "egress_rid", "priority")},
    **{n: "queueing_metadata" for n in ("enq_timestamp", "enq_qdepth", "deq_timedelta", "deq_qdepth", "qid")},
}
# simple_switch fills queueing metadata only when all four of these exist (check_queueing_metadata)
QUEUEING_FIELDS = ("enq_timestamp", "enq_qdepth", "deq_timedelta", "deq_qdepth")


def simple_switch_field(field_index: dict[tuple[str, str], int], name: str) -> int | None:
    """Slot of the metadata field simple_switch knows as `name` (e.g. "mcast_grp" is
    `intrinsic_metadata.mcast_grp`), or None when the program has no such field (or, for
    queueing metadata, lacks any of the four that simple_switch needs to fill them)."""
    header = SIMPLE_SWITCH_FIELDS[name]
    if header == "queueing_metadata" and any((header, q) not in field_index for q in QUEUEING_FIELDS):
        return None
    return field_index.get((header, name))


@dataclass
class Program:
    """A loaded program: layout, compiled stages and the runtime objects they use."""
    json: dict
    field_index: dict[tuple[str, str], int]
    field_width: dict[int, int]
    header_index: dict[str, int]
    header_fields: dict[str, list[tuple[str, int, bool]]]
    metadata_headers: set[int]
    stacks: dict[str, list[int]]
    errors: dict[str, int]
    F0: list
    V0: list
    NX0: list
    actions: dict[str, ActionSpec]
    actions_by_id: dict[int, ActionSpec]
    tables: dict[str, Table]
    profiles: dict[str, ActionProfile]
    counters: dict[str, CounterArray]
    meters: dict[str, MeterArray]
    registers: dict[str, RegisterArray]
    field_lists: dict[int, list[int]]
    learn_lists: dict[int, tuple[str, list[int]]]
    parser: Callable = None
    verify_checksums: Callable = None
    update_checksums: Callable = None
    ingress: Callable = None
    egress: Callable = None
    deparser: Callable = None
    log: list = field(default_factory=list)
    value_sets: dict[str, ParseValueSet] = field(default_factory=dict)

    def new_state(self) -> PacketState:
        return PacketState(self.F0[:], self.V0[:], self.NX0[:])

    def sm(self, name: str) -> int | None:
        """Slot of the metadata field simple_switch knows as `name`, or None (see
        `simple_switch_field`)."""
        return simple_switch_field(self.field_index, name)
