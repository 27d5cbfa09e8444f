"""Embedded v1model engine: executes BMv2 JSON with BMv2's semantics.

Public API (names are BMv2 JSON / P4Info names):
    Engine(bmv2_json, priority_queues=1, queue_depth=64, clock_us=None, log=None)
      .load(json); .process(port, data) -> [(port, data)]; .start(transmit) / .receive / .stop
      tables:     table_add(table, key, action, data, priority, member=, group=) -> handle,
                  table_modify, table_delete, table_clear, table_find, table_entries,
                  table_set_default, table_reset_default, table_get_default,
                  table_entry_counter(_write), table_entry_meter_set/_get
      profiles:   act_prof_add_member/modify_member/delete_member/create_group/delete_group/
                  add_member_to_group/remove_member_from_group
      externs:    counter_read/write/reset, meter_set_rates/get_rates/reset_rates,
                  register_read/write/reset
      PRE:        mc_mgrp_create/destroy, mc_node_create/update/destroy, mc_node_associate/
                  dissociate, mc_group_set(mgrp, [(port, rid)]), mc_group_replicas
      mirroring:  mirroring_add(session, port, truncate, mgrp), mirroring_delete, mirroring_get
      TM:         set_queue_rate(pps, port, priority), set_queue_depth(depth, port, priority)
                  (BMv2: per priority queue; priority 7 is served first), set_port_rate(pps, port)
                  (extension: whole-port shaper), tm.depth_of(port, priority)
      callbacks:  set_digest_callback(cb(name, id, values)), set_log_callback(cb(msg))
Match values: Exact, Lpm, Ternary, Range, Optional, Valid (plain ints mean exact).
Entry priorities follow BMv2: the lowest value wins (map P4Runtime's "higher wins").
Meter rates follow BMv2's meter_set_rates: units per microsecond, bursts in units.
Timestamps in standard_metadata are microseconds since the Engine was created.
"""
from .engine import Engine, MirrorSession
from .errors import (DuplicateEntryError, EngineError, InvalidEntryError, NoProgramError,
                     NoSuchHandleError, ProgramLoadError, ResourceExhaustedError, UnknownNameError)
from .externs import GREEN, RED, YELLOW
from .match import Exact, Lpm, MatchValue, Optional, Range, Ternary, Valid
from .packet import (COALESCED, DROP_PORT, EGRESS_CLONE, INGRESS_CLONE, NORMAL, RECIRC,
                      REPLICATION, RESUBMIT)
from .tables import TableEntry

__all__ = [
    "Engine", "MirrorSession", "TableEntry", "Exact", "Lpm", "Ternary", "Range", "Optional", "Valid",
    "MatchValue", "EngineError", "ProgramLoadError", "NoProgramError", "UnknownNameError",
    "InvalidEntryError", "DuplicateEntryError", "NoSuchHandleError", "ResourceExhaustedError",
    "GREEN", "YELLOW", "RED", "NORMAL", "INGRESS_CLONE", "EGRESS_CLONE", "COALESCED", "RECIRC",
    "REPLICATION", "RESUBMIT", "DROP_PORT",
]
