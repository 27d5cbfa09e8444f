"""A router in the JSON older compilers wrote (p4c-bm for P4_14), a packet for it and the
forwarding it must give: shared by the engine's unit tests and the simple_switch_CLI test."""
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from p4target.engine import Exact, Lpm


def field(h, f):
    return {"type": "field", "value": [h, f]}


def hexv(v):
    return {"type": "hexstr", "value": hex(v)}


def older_router() -> dict:
    """ethernet/ipv4; ingress `ipv4_lpm` (lpm dstAddr) -> set_nhop(nhop_ipv4, port) | _drop, then
    `forward` (exact nhop_ipv4) -> set_dmac(dmac) | _drop; egress `send_frame` (exact egress_port) ->
    rewrite_mac(smac) | _drop; ipv4 checksum recomputed."""
    ipv4 = [["version", 4], ["ihl", 4], ["diffserv", 8], ["totalLen", 16], ["identification", 16],
            ["flags", 3], ["fragOffset", 13], ["ttl", 8], ["protocol", 8], ["hdrChecksum", 16],
            ["srcAddr", 32], ["dstAddr", 32]]
    sm = [["ingress_port", 9], ["packet_length", 32], ["egress_spec", 9], ["egress_port", 9],
          ["egress_instance", 32], ["instance_type", 32], ["clone_spec", 32], ["_padding", 5]]

    def action(name, aid, params, prims):
        return {"name": name, "id": aid, "runtime_data": [{"name": p, "bitwidth": w} for p, w in params],
                "primitives": prims}

    def table(name, tid, key, match, actions, nxt):
        return {"name": name, "id": tid, "match_type": match, "type": "simple", "max_size": 512, "support_timeout": False,
                "key": [{"match_type": match, "target": key, "mask": None}], "actions": actions,
                "next_tables": {a: nxt for a in actions}, "base_default_next": nxt}

    drop = [{"op": "drop", "parameters": []}]
    return {
        "header_types": [
            {"name": "standard_metadata_t", "id": 0, "fields": sm, "length_exp": None, "max_length": None},
            {"name": "ethernet_t", "id": 1, "fields": [["dstAddr", 48], ["srcAddr", 48], ["etherType", 16]]},
            {"name": "ipv4_t", "id": 2, "fields": ipv4},
            {"name": "routing_metadata_t", "id": 3, "fields": [["nhop_ipv4", 32]]},
        ],
        "headers": [
            {"name": "standard_metadata", "id": 0, "header_type": "standard_metadata_t", "metadata": True},
            {"name": "ethernet", "id": 1, "header_type": "ethernet_t", "metadata": False},
            {"name": "ipv4", "id": 2, "header_type": "ipv4_t", "metadata": False},
            {"name": "routing_metadata", "id": 3, "header_type": "routing_metadata_t", "metadata": True},
        ],
        "header_stacks": [],
        "parsers": [{"name": "parser", "id": 0, "init_state": "start", "parse_states": [
            {"name": "start", "id": 0, "parser_ops": [], "transition_key": [],
             "transitions": [{"value": "default", "mask": None, "next_state": "parse_ethernet"}]},
            {"name": "parse_ethernet", "id": 1,
             "parser_ops": [{"op": "extract", "parameters": [{"type": "regular", "value": "ethernet"}]}],
             "transition_key": [field("ethernet", "etherType")],
             "transitions": [{"value": "0x0800", "mask": None, "next_state": "parse_ipv4"},
                             {"value": "default", "mask": None, "next_state": None}]},
            {"name": "parse_ipv4", "id": 2,
             "parser_ops": [{"op": "extract", "parameters": [{"type": "regular", "value": "ipv4"}]}],
             "transition_key": [], "transitions": [{"value": "default", "mask": None, "next_state": None}]},
        ]}],
        "deparsers": [{"name": "deparser", "id": 0, "order": ["ethernet", "ipv4"]}],
        "meter_arrays": [], "counter_arrays": [{"name": "seen", "id": 0, "size": 16, "is_direct": False}],
        "register_arrays": [],
        "calculations": [{"name": "ipv4_checksum", "id": 0, "algo": "csum16",
                          "input": [field("ipv4", f) for f, _ in ipv4 if f != "hdrChecksum"]}],
        "learn_lists": [],
        "actions": [
            action("_drop", 0, [], drop),
            action("set_nhop", 1, [("nhop_ipv4", 32), ("port", 9)], [
                {"op": "modify_field", "parameters": [field("routing_metadata", "nhop_ipv4"),
                                                      {"type": "runtime_data", "value": 0}]},
                {"op": "modify_field", "parameters": [field("standard_metadata", "egress_spec"),
                                                      {"type": "runtime_data", "value": 1}]},
                {"op": "add_to_field", "parameters": [field("ipv4", "ttl"), hexv(0xff)]},
                {"op": "count", "parameters": [{"type": "counter_array", "value": "seen"}, hexv(1)]}]),
            action("set_dmac", 2, [("dmac", 48)], [
                {"op": "modify_field", "parameters": [field("ethernet", "dstAddr"),
                                                      {"type": "runtime_data", "value": 0}]}]),
            action("rewrite_mac", 3, [("smac", 48)], [
                {"op": "modify_field", "parameters": [field("ethernet", "srcAddr"),
                                                      {"type": "runtime_data", "value": 0}]}]),
        ],
        "pipelines": [
            {"name": "ingress", "id": 0, "init_table": "_condition_0", "action_profiles": [],
             "tables": [table("ipv4_lpm", 0, ["ipv4", "dstAddr"], "lpm", ["set_nhop", "_drop"], "forward"),
                        table("forward", 1, ["routing_metadata", "nhop_ipv4"], "exact", ["set_dmac", "_drop"], None)],
             "conditionals": [{"name": "_condition_0", "id": 0,
                               "expression": {"type": "expression", "value": {
                                   "op": "valid", "left": None, "right": {"type": "header", "value": "ipv4"}}},
                               "true_next": "ipv4_lpm", "false_next": None}]},
            {"name": "egress", "id": 1, "init_table": "send_frame", "action_profiles": [], "conditionals": [],
             "tables": [table("send_frame", 2, ["standard_metadata", "egress_port"], "exact",
                              ["rewrite_mac", "_drop"], None)]},
        ],
        "checksums": [{"name": "ipv4.hdrChecksum", "id": 0, "target": ["ipv4", "hdrChecksum"], "type": "generic",
                       "calculation": "ipv4_checksum"}],
        "force_arith": [],
    }


def packet(dst="10.0.1.10", ttl=64) -> bytes:
    return bytes(Ether(dst="00:00:00:00:00:aa", src="00:00:00:00:00:bb") / IP(dst=dst, ttl=ttl) /
                 UDP(sport=1, dport=2) / b"older")


def routes(add) -> None:
    add("ipv4_lpm", [Lpm(0x0A000100, 24)], "set_nhop", [0x0A000101, 3])
    add("forward", [Exact(0x0A000101)], "set_dmac", [0x0000000000CC])
    add("send_frame", [Exact(3)], "rewrite_mac", [0x0000000000DD])


def check_forwarded(out: list) -> None:
    assert [port for port, _ in out] == [3]
    pkt = Ether(out[0][1])
    assert (pkt.dst, pkt.src, pkt[IP].ttl) == ("00:00:00:00:00:cc", "00:00:00:00:00:dd", 63)
    before = pkt[IP].chksum
    del pkt[IP].chksum
    assert Ether(bytes(pkt))[IP].chksum == before  # recomputed after the ttl change
