"""A loaded program: PHV layout, compiled stages and the runtime objects they use.

`loader.load_program()` builds one from BMv2 JSON."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from .externs import CounterArray, MeterArray, ParseValueSet, RegisterArray
from .packet import PacketState
from .tables import ActionProfile, ActionSpec, Table


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
        """Slot of a standard/intrinsic/queueing metadata field, or None if the program lacks it."""
        for hdr in ("standard_metadata", "intrinsic_metadata", "queueing_metadata"):
            idx = self.field_index.get((hdr, name))
            if idx is not None:
                return idx
        return None
