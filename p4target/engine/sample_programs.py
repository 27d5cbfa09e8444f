"""Small BMv2 JSON programs built in code (p4c's output shape), for tests and benchmarks
while no compiler is needed: an IPv4 LPM router with checksum update and a counter."""
from __future__ import annotations

STANDARD_METADATA = [
    ["ingress_port", 9, False], ["egress_spec", 9, False], ["egress_port", 9, False],
    ["instance_type", 32, False], ["packet_length", 32, False], ["enq_timestamp", 32, False],
    ["enq_qdepth", 19, False], ["deq_timedelta", 32, False], ["deq_qdepth", 19, False],
    ["ingress_global_timestamp", 48, False], ["egress_global_timestamp", 48, False],
    ["mcast_grp", 16, False], ["egress_rid", 16, False], ["checksum_error", 1, False],
    ["parser_error", 32, False], ["priority", 3, False], ["_padding", 3, False],
]

# p4c's field_aliases for v1model's standard_metadata (its @alias annotations): the names
# simple_switch uses for multicast, priority queues, queueing metadata and timestamps
FIELD_ALIASES = [[alias, ["standard_metadata", alias.split(".")[1]]] for alias in (
    "queueing_metadata.enq_timestamp", "queueing_metadata.enq_qdepth", "queueing_metadata.deq_timedelta",
    "queueing_metadata.deq_qdepth", "intrinsic_metadata.ingress_global_timestamp",
    "intrinsic_metadata.egress_global_timestamp", "intrinsic_metadata.mcast_grp", "intrinsic_metadata.egress_rid",
    "intrinsic_metadata.priority")]

ERRORS = [["NoError", 0], ["PacketTooShort", 1], ["NoMatch", 2], ["StackOutOfBounds", 3],
          ["HeaderTooShort", 4], ["ParserTimeout", 5], ["ParserInvalidArgument", 6]]

IPV4_FIELDS = [["version", 4, False], ["ihl", 4, False], ["diffserv", 8, False],
               ["totalLen", 16, False], ["identification", 16, False], ["flags", 3, False],
               ["fragOffset", 13, False], ["ttl", 8, False], ["protocol", 8, False],
               ["hdrChecksum", 16, False], ["srcAddr", 32, False], ["dstAddr", 32, False]]


def F(h: str, f: str) -> dict:
    return {"type": "field", "value": [h, f]}


def hexv(v: int) -> dict:
    return {"type": "hexstr", "value": hex(v)}


def op(o: str, left, right) -> dict:
    """An expression node (an operand, a condition)."""
    return {"type": "expression", "value": {"op": o, "left": left, "right": right}}


def expr_param(node: dict) -> dict:
    """A primitive parameter holding an expression: BMv2 reads the value as an expression node."""
    return {"type": "expression", "value": node}


def l3_router() -> dict:
    """ethernet/ipv4 parser; ingress: if ipv4 valid apply MyIngress.ipv4_lpm (lpm on dstAddr)
    with ipv4_forward(dstAddr, port) / drop / NoAction, count per ingress port in
    MyIngress.rx (indirect counter); egress empty; ipv4 checksum updated (csum16)."""
    ipv4_csum_inputs = [F("ipv4", n) for n, _, _ in IPV4_FIELDS if n != "hdrChecksum"]
    return {
        "header_types": [
            {"name": "scalars_0", "id": 0, "fields": [["tmp", 8, False]]},
            {"name": "standard_metadata", "id": 1, "fields": STANDARD_METADATA},
            {"name": "ethernet_t", "id": 2, "fields": [["dstAddr", 48, False], ["srcAddr", 48, False],
                                                       ["etherType", 16, False]]},
            {"name": "ipv4_t", "id": 3, "fields": IPV4_FIELDS},
        ],
        "headers": [
            {"name": "scalars", "id": 0, "header_type": "scalars_0", "metadata": True, "pi_omit": True},
            {"name": "standard_metadata", "id": 1, "header_type": "standard_metadata", "metadata": True, "pi_omit": True},
            {"name": "ethernet", "id": 2, "header_type": "ethernet_t", "metadata": False, "pi_omit": True},
            {"name": "ipv4", "id": 3, "header_type": "ipv4_t", "metadata": False, "pi_omit": True},
        ],
        "header_stacks": [], "header_union_types": [], "header_unions": [], "header_union_stacks": [],
        "field_lists": [],
        "errors": ERRORS,
        "enums": [],
        "parsers": [{
            "name": "parser", "id": 0, "init_state": "start",
            "parse_states": [
                {"name": "start", "id": 0,
                 "parser_ops": [{"op": "extract", "parameters": [{"type": "regular", "value": "ethernet"}]}],
                 "transition_key": [F("ethernet", "etherType")],
                 "transitions": [{"type": "hexstr", "value": "0x0800", "mask": None, "next_state": "parse_ipv4"},
                                 {"type": "default", "value": None, "mask": None, "next_state": None}]},
                {"name": "parse_ipv4", "id": 1,
                 "parser_ops": [{"op": "extract", "parameters": [{"type": "regular", "value": "ipv4"}]}],
                 "transition_key": [],
                 "transitions": [{"type": "default", "value": None, "mask": None, "next_state": None}]},
            ]}],
        "parse_vsets": [],
        "deparsers": [{"name": "deparser", "id": 0, "order": ["ethernet", "ipv4"]}],
        "meter_arrays": [],
        "counter_arrays": [{"name": "MyIngress.rx", "id": 0, "is_direct": False, "size": 512}],
        "register_arrays": [],
        "calculations": [{"name": "calc", "id": 0, "algo": "csum16", "input": ipv4_csum_inputs}],
        "learn_lists": [],
        "actions": [
            {"name": "NoAction", "id": 0, "runtime_data": [], "primitives": []},
            {"name": "MyIngress.drop", "id": 1, "runtime_data": [],
             "primitives": [{"op": "mark_to_drop", "parameters": [{"type": "header", "value": "standard_metadata"}]}]},
            {"name": "MyIngress.ipv4_forward", "id": 2,
             "runtime_data": [{"name": "dstAddr", "bitwidth": 48}, {"name": "port", "bitwidth": 9}],
             "primitives": [
                 {"op": "assign", "parameters": [F("standard_metadata", "egress_spec"), {"type": "runtime_data", "value": 1}]},
                 {"op": "assign", "parameters": [F("ethernet", "srcAddr"), F("ethernet", "dstAddr")]},
                 {"op": "assign", "parameters": [F("ethernet", "dstAddr"), {"type": "runtime_data", "value": 0}]},
                 {"op": "assign", "parameters": [F("ipv4", "ttl"), expr_param(
                     op("&", op("+", F("ipv4", "ttl"), hexv(0xff)), hexv(0xff)))]},
             ]},
            {"name": "act_count", "id": 3, "runtime_data": [],
             "primitives": [{"op": "count", "parameters": [{"type": "counter_array", "value": "MyIngress.rx"},
                                                           F("standard_metadata", "ingress_port")]}]},
        ],
        "pipelines": [
            {"name": "ingress", "id": 0, "init_table": "tbl_count",
             "tables": [
                 {"name": "tbl_count", "id": 0, "key": [], "match_type": "exact", "type": "simple",
                  "max_size": 1024, "with_counters": False, "support_timeout": False, "direct_meters": None,
                  "action_ids": [3], "actions": ["act_count"], "base_default_next": "node_3",
                  "next_tables": {"act_count": "node_3"},
                  "default_entry": {"action_id": 3, "action_const": True, "action_data": [], "action_entry_const": True}},
                 {"name": "MyIngress.ipv4_lpm", "id": 1,
                  "key": [{"match_type": "lpm", "name": "hdr.ipv4.dstAddr", "target": ["ipv4", "dstAddr"], "mask": None}],
                  "match_type": "lpm", "type": "simple", "max_size": 1024, "with_counters": False,
                  "support_timeout": False, "direct_meters": None,
                  "action_ids": [2, 1, 0], "actions": ["MyIngress.ipv4_forward", "MyIngress.drop", "NoAction"],
                  "base_default_next": None,
                  "next_tables": {"MyIngress.ipv4_forward": None, "MyIngress.drop": None, "NoAction": None},
                  "default_entry": {"action_id": 1, "action_const": False, "action_data": [], "action_entry_const": False}},
             ],
             "action_profiles": [],
             "conditionals": [{"name": "node_3", "id": 0,
                               "expression": op("d2b", None, op("valid", None, {"type": "header", "value": "ipv4"})),
                               "true_next": "MyIngress.ipv4_lpm", "false_next": None}]},
            {"name": "egress", "id": 1, "init_table": None, "tables": [], "action_profiles": [], "conditionals": []},
        ],
        "checksums": [{"name": "cksum", "id": 0, "target": ["ipv4", "hdrChecksum"], "type": "generic",
                       "calculation": "calc", "verify": False, "update": True,
                       "if_cond": op("d2b", None, op("valid", None, {"type": "header", "value": "ipv4"}))}],
        "force_arith": [], "extern_instances": [], "field_aliases": FIELD_ALIASES,
        "program": "l3_router.p4",
        "__meta__": {"version": [2, 23], "compiler": "hand-built"},
    }
