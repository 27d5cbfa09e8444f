"""v1model features on small hand-built BMv2 JSON programs: match kinds and priorities,
multicast, clone, resubmit, recirculate, registers, meters, hashes, digests, exit, stacks."""
from p4target.engine import (Engine, Exact, Range, Ternary, GREEN, YELLOW, RED,
                             INGRESS_CLONE, REPLICATION, RESUBMIT, InvalidEntryError)
from p4target.engine import hashes
from p4target.engine.errors import ProgramLoadError
from p4target.engine.sample_programs import ERRORS, FIELD_ALIASES, STANDARD_METADATA, F, expr_param, hexv, op
import pytest

SM = "standard_metadata"


def rd(i):
    return {"type": "runtime_data", "value": i}


def assign(dst, src):
    return {"op": "assign", "parameters": [dst, src]}


def _match_type(keys) -> str:
    """The table match type p4c writes for these key match kinds."""
    kinds = {mt for _, mt in keys}
    for kind in ("range", "ternary", "optional", "lpm"):
        if kind in kinds:
            return "ternary" if kind == "optional" else kind
    return "exact"


def program(keys=(), actions=(), egress_actions=(), extra=None, table_type="simple", profiles=()):
    """h = {a:8, b:8, c:16, d:32}; ingress: table t (keys, actions, default = first action);
    egress: table te whose const default is the first of egress_actions (if any)."""
    acts = [{"name": n, "id": i, "runtime_data": [{"name": p, "bitwidth": w} for p, w in params],
             "primitives": prims} for i, (n, params, prims) in enumerate(list(actions) + list(egress_actions))]
    n_in = len(actions)
    j = {
        "header_types": [
            {"name": "scalars_0", "id": 0, "fields": [["m8", 8, False], ["m32", 32, False]]},
            {"name": SM, "id": 1, "fields": STANDARD_METADATA},
            {"name": "h_t", "id": 2, "fields": [["a", 8, False], ["b", 8, False], ["c", 16, False], ["d", 32, False]]},
        ],
        "headers": [
            {"name": "scalars", "id": 0, "header_type": "scalars_0", "metadata": True},
            {"name": SM, "id": 1, "header_type": SM, "metadata": True},
            {"name": "h", "id": 2, "header_type": "h_t", "metadata": False},
        ],
        "errors": ERRORS, "field_aliases": FIELD_ALIASES,
        "field_lists": [{"id": 1, "name": "fl", "elements": [F("scalars", "m8")]}],
        "learn_lists": [{"id": 1, "name": "dg", "elements": [F("h", "a"), F("h", "c")]}],
        "parsers": [{"name": "parser", "id": 0, "init_state": "start", "parse_states": [
            {"name": "start", "id": 0,
             "parser_ops": [{"op": "extract", "parameters": [{"type": "regular", "value": "h"}]}],
             "transition_key": [], "transitions": [{"type": "default", "value": None, "mask": None, "next_state": None}]}]}],
        "deparsers": [{"name": "deparser", "id": 0, "order": ["h"]}],
        "meter_arrays": [], "counter_arrays": [], "register_arrays": [], "calculations": [],
        "actions": acts,
        "pipelines": [
            {"name": "ingress", "id": 0, "init_table": "t", "action_profiles": list(profiles),
             "conditionals": [],
             "tables": [{"name": "t", "id": 0, "type": table_type, "match_type": _match_type(keys),
                         "action_profile": profiles[0]["name"] if profiles else None,
                         "key": [{"match_type": mt, "name": f"h.{f}", "target": ["h", f], "mask": None} for f, mt in keys],
                         "max_size": 64, "with_counters": False, "direct_meters": None,
                         "action_ids": list(range(n_in)), "actions": [a[0] for a in actions],
                         "base_default_next": None, "next_tables": {a[0]: None for a in actions},
                         "default_entry": {"action_id": 0, "action_const": False, "action_data": [] if not actions[0][1] else ["0x0"] * len(actions[0][1]),
                                           "action_entry_const": False}}]},
            {"name": "egress", "id": 1, "init_table": "te" if egress_actions else None, "action_profiles": [],
             "conditionals": [],
             "tables": [{"name": "te", "id": 1, "type": "simple", "match_type": "exact", "key": [], "max_size": 1,
                         "action_ids": [n_in], "actions": [egress_actions[0][0]], "base_default_next": None,
                         "next_tables": {egress_actions[0][0]: None},
                         "default_entry": {"action_id": n_in, "action_const": True, "action_data": [],
                                           "action_entry_const": True}}] if egress_actions else []},
        ],
        "checksums": [],
    }
    for k, v in (extra or {}).items():
        j[k] = v
    return j


def pkt(a=1, b=2, c=3, d=4, tail=b""):
    return bytes([a, b]) + c.to_bytes(2, "big") + d.to_bytes(4, "big") + tail


FWD = ("fwd", [("port", 9)], [assign(F(SM, "egress_spec"), rd(0))])
SETB = ("setb", [("v", 8), ("port", 9)], [assign(F("h", "b"), rd(0)), assign(F(SM, "egress_spec"), rd(1))])
DROP = ("drop", [], [{"op": "mark_to_drop", "parameters": [{"type": "header", "value": SM}]}])


def test_ternary_lowest_priority_value_wins_then_range_and_optional():
    # an optional key reaches BMv2 JSON as "ternary" (BMv2 has no "optional" match type): a value
    # is a full mask, a wildcard mask 0
    eng = Engine(program(keys=[("a", "ternary"), ("c", "range"), ("d", "ternary")], actions=[DROP, SETB]))
    eng.table_add("t", [Ternary(0, 0), Range(0, 0xFFFF), Ternary(0, 0)], "setb", [9, 1], priority=20)
    eng.table_add("t", [Ternary(1, 0xFF), Range(2, 5), Ternary(4, 0xFFFFFFFF)], "setb", [7, 2], priority=10)
    assert eng.process(0, pkt()) == [(2, pkt(b=7))]
    assert eng.process(0, pkt(c=6)) == [(1, pkt(b=9, c=6))]   # out of range
    assert eng.process(0, pkt(d=5)) == [(1, pkt(b=9, d=5))]   # optional mismatch
    with pytest.raises(InvalidEntryError):
        eng.table_add("t", [Ternary(0, 0), Range(0, 1), Ternary(1, 0xFFFFFFFF)], "setb", [1, 1])  # no priority
    with pytest.raises(ProgramLoadError, match="invalid match type 'optional'"):
        Engine(program(keys=[("d", "optional")], actions=[DROP, SETB]))


def test_exact_table_and_modify_delete():
    eng = Engine(program(keys=[("a", "exact")], actions=[DROP, FWD]))
    h = eng.table_add("t", [Exact(1)], "fwd", [4])
    assert eng.process(0, pkt())[0][0] == 4
    eng.table_modify("t", h, "fwd", [6])
    assert eng.process(0, pkt())[0][0] == 6
    eng.table_delete("t", h)
    assert eng.process(0, pkt()) == []


def test_multicast_replicas_carry_rid_and_instance_type():
    mc = ("mc", [], [assign(F(SM, "mcast_grp"), hexv(5)),
                     assign(F(SM, "egress_spec"), hexv(511))])
    mark = ("mark", [], [assign(F("h", "a"), F(SM, "instance_type")), assign(F("h", "b"), F(SM, "egress_rid"))])
    eng = Engine(program(actions=[mc], egress_actions=[mark]))
    eng.mc_mgrp_create(5)
    eng.mc_node_associate(5, eng.mc_node_create(7, [1, 2]))
    eng.mc_node_associate(5, eng.mc_node_create(9, [3]))
    out = sorted(eng.process(0, pkt()))
    assert out == [(1, pkt(a=REPLICATION, b=7)), (2, pkt(a=REPLICATION, b=7)), (3, pkt(a=REPLICATION, b=9))]
    assert sorted(eng.mc_group_replicas(5)) == [(1, 7), (2, 7), (3, 9)]


def test_clone_i2e_sends_original_packet_to_session_port_with_truncation():
    clone = ("cl", [], [assign(F("h", "b"), hexv(0x55)), assign(F(SM, "egress_spec"), hexv(1)),
                        {"op": "clone_ingress_pkt_to_egress", "parameters": [hexv(3), hexv(1)]}])
    mark = ("mark", [], [assign(F("h", "a"), F(SM, "instance_type"))])
    eng = Engine(program(actions=[clone], egress_actions=[mark]))
    eng.mirroring_add(3, port=8)
    out = dict(eng.process(0, pkt(a=9, tail=b"xyz")))
    assert out[1] == pkt(a=0, b=0x55, tail=b"xyz")
    # the clone is the received packet parsed again: ingress changes are not in it,
    # egress sees instance_type INGRESS_CLONE
    assert out[8] == pkt(a=INGRESS_CLONE, b=2, tail=b"xyz")
    eng.mirroring_add(3, port=8, truncate=4)
    assert dict(eng.process(0, pkt(tail=b"xyz")))[8] == pkt()[:4]


def test_resubmit_reenters_ingress_with_preserved_field():
    # first pass (instance_type 0): m8 = 42, resubmit; second pass: h.b = m8, h.a = instance_type
    first = [assign(F("scalars", "m8"), hexv(42)), {"op": "resubmit", "parameters": [hexv(1)]}]
    second = [assign(F("h", "b"), F("scalars", "m8")), assign(F("h", "a"), F(SM, "instance_type")),
              assign(F(SM, "egress_spec"), hexv(2))]
    act = ("go", [], [{"op": "assign", "parameters": [F("scalars", "m32"), F(SM, "instance_type")]}])
    j = program(actions=[act])
    j["pipelines"][0]["conditionals"] = [{"name": "c", "id": 0,
                                          "expression": op("==", F(SM, "instance_type"), hexv(0)),
                                          "true_next": "t1", "false_next": "t2"}]
    j["actions"] += [{"name": "first", "id": 10, "runtime_data": [], "primitives": first},
                     {"name": "second", "id": 11, "runtime_data": [], "primitives": second}]
    j["pipelines"][0]["action_calls"] = [{"name": "t1", "id": 0, "action_id": 10, "next_node": None},
                                         {"name": "t2", "id": 1, "action_id": 11, "next_node": None}]
    j["pipelines"][0]["init_table"] = "c"
    eng = Engine(j)
    assert eng.process(0, pkt()) == [(2, pkt(a=RESUBMIT, b=42))]
    # simple_switch takes a field list id of 0 for "no resubmit requested"
    first[1]["parameters"] = [hexv(0)]
    assert Engine(j).process(0, pkt()) == [(0, pkt())]  # the first pass leaves on egress_spec 0


def test_recirculate_reenters_with_deparsed_packet():
    j = program(actions=[("inc", [], [assign(F("h", "a"), expr_param(op("&", op("+", F("h", "a"), hexv(1)), hexv(0xff)))),
                                      assign(F(SM, "egress_spec"), hexv(3))])],
                egress_actions=[("rc", [], [])])
    j["pipelines"][1]["conditionals"] = [{"name": "c", "id": 0, "expression": op("<", F("h", "a"), hexv(4)),
                                          "true_next": "te", "false_next": None}]
    j["pipelines"][1]["init_table"] = "c"
    j["actions"][-1]["primitives"] = [{"op": "recirculate", "parameters": [hexv(1)]}]
    eng = Engine(j)
    assert eng.process(0, pkt(a=1)) == [(3, pkt(a=4))]


def test_registers_count_packets_and_control_plane_reads():
    j = program(actions=[("cnt", [], [
        {"op": "register_read", "parameters": [F("scalars", "m32"), {"type": "register_array", "value": "r"}, hexv(2)]},
        {"op": "register_write", "parameters": [{"type": "register_array", "value": "r"}, hexv(2),
                                                expr_param(op("+", F("scalars", "m32"), hexv(1)))]},
        assign(F("h", "d"), F("scalars", "m32"))])],
        extra={"register_arrays": [{"name": "r", "id": 0, "size": 4, "bitwidth": 32}]})
    eng = Engine(j)
    eng.process(0, pkt())
    out = eng.process(0, pkt())
    assert out == [(0, pkt(d=1))]
    assert eng.register_read("r", 2) == 2
    eng.register_write("r", 2, 100)
    assert eng.process(0, pkt()) == [(0, pkt(d=100))]
    eng.register_reset("r")
    assert eng.register_read("r", 2) == 0
    with pytest.raises(InvalidEntryError):
        eng.register_read("r", 4)


def test_meter_colours_green_yellow_red():
    now = [0.0]
    j = program(actions=[("m", [], [{"op": "execute_meter", "parameters": [
        {"type": "meter_array", "value": "mt"}, hexv(0), F("h", "a")]}])],
        extra={"meter_arrays": [{"name": "mt", "id": 0, "is_direct": False, "size": 1, "rate_count": 2,
                                 "type": "packets"}]})
    eng = Engine(j, clock_us=lambda: now[0])
    assert eng.process(0, pkt())[0][1][0] == GREEN  # unconfigured
    eng.meter_set_rates("mt", 0, [(0.000001, 1), (0.000002, 2)])
    colours = [eng.process(0, pkt())[0][1][0] for _ in range(3)]
    assert colours == [GREEN, YELLOW, RED]


def test_hash_algorithms_known_values():
    assert hashes.crc32(b"123456789") == 0xCBF43926
    assert hashes.crc16(b"123456789") == 0xBB3D
    assert hashes.csum16(bytes.fromhex("450000730000400040110000c0a80001c0a800c7")) == 0xB861
    assert hashes.xor16(b"\x12\x34\x56\x78") == 0x444C
    assert hashes.identity(b"\x01\x02") == 0x102
    assert hashes.identity(bytes(range(1, 11))) == 0x0102030405060708  # BMv2 keeps 8 bytes
    assert hashes.ALGORITHMS["crc16_custom"](b"123456789") == 0xBB3D
    assert hashes.ALGORITHMS["crc32_custom"](b"123456789") == 0xCBF43926


def test_hash_primitive_in_action():
    j = program(actions=[("hsh", [], [{"op": "modify_field_with_hash_based_offset", "parameters": [
        F("h", "c"), hexv(0), {"type": "calculation", "value": "hc"}, hexv(0x10000)]}])],
        extra={"calculations": [{"name": "hc", "id": 0, "algo": "crc16", "input": [F("h", "a"), F("h", "b")]}]})
    eng = Engine(j)
    assert eng.process(0, pkt())[0][1][2:4] == hashes.crc16(b"\x01\x02").to_bytes(2, "big")


def test_hash_leaves_out_fields_of_invalid_headers_like_bmv2():
    calc = {"name": "hc", "id": 0, "algo": "crc16", "input": [F("h", "a"), F("h", "b"), F("scalars", "m8")]}
    hsh = {"op": "modify_field_with_hash_based_offset", "parameters": [
        F("scalars", "m32"), hexv(0), {"type": "calculation", "value": "hc"}, hexv(0x10000)]}
    keep = {"op": "register_write", "parameters": [{"type": "register_array", "value": "r"}, hexv(0), F("scalars", "m32")]}
    j = program(actions=[("hsh", [], [assign(F("scalars", "m8"), hexv(7)), hsh, keep,
                                      {"op": "remove_header", "parameters": [{"type": "header", "value": "h"}]},
                                      hsh, {"op": "register_write", "parameters": [
                                          {"type": "register_array", "value": "r"}, hexv(1), F("scalars", "m32")]}])],
                extra={"calculations": [calc], "register_arrays": [{"name": "r", "id": 0, "size": 2, "bitwidth": 32}]})
    eng = Engine(j)
    eng.process(0, pkt())
    assert eng.register_read("r", 0) == hashes.crc16(b"\x01\x02\x07")
    assert eng.register_read("r", 1) == hashes.crc16(b"\x07")


def test_out_of_range_register_read_and_meter_leave_the_destination_alone():
    rr = {"op": "register_read", "parameters": [F("h", "b"), {"type": "register_array", "value": "r"}, F("h", "a")]}
    em = {"op": "execute_meter", "parameters": [{"type": "meter_array", "value": "m"}, F("h", "a"), F("h", "c")]}
    j = program(actions=[("rd", [], [rr, em, assign(F(SM, "egress_spec"), hexv(1))])],
                extra={"register_arrays": [{"name": "r", "id": 0, "size": 2, "bitwidth": 8}],
                       "meter_arrays": [{"name": "m", "id": 0, "type": "packets", "rate_count": 2, "size": 2,
                                         "is_direct": False}]})
    eng = Engine(j)
    eng.register_write("r", 1, 0x44)
    assert eng.process(0, pkt(a=1, b=2, c=3))[0][1][:4] == bytes([1, 0x44, 0, 0])  # in range: GREEN
    assert eng.process(0, pkt(a=9, b=2, c=3))[0][1][:4] == bytes([9, 2, 0, 3])  # beyond: unchanged


def test_p4_14_era_primitives_of_simple_switch():
    def prim(op, *params):
        return {"op": op, "parameters": list(params)}
    j = program(actions=[("legacy", [], [
        prim("add_to_field", F("h", "a"), hexv(0x10)),          # a = 0x01 + 0x10
        prim("subtract", F("h", "b"), F("h", "b"), hexv(3)),     # b = 0x02 - 3 (wraps)
        prim("bit_or", F("h", "c"), F("h", "c"), hexv(0x100)),   # c = 0x0103
        prim("shift_left", F("h", "d"), F("h", "d"), hexv(4)),   # d = 0x40
        prim("no_op"), prim("modify_field", F(SM, "egress_spec"), hexv(1))])])
    out = Engine(j).process(0, pkt())[0][1]
    assert out[:8] == bytes([0x11, 0xFF, 0x01, 0x03, 0, 0, 0, 0x40])


def test_deparser_method_calls_run_before_emission():
    j = program(actions=[FWD], extra={"deparsers": [{"name": "deparser", "id": 0, "order": ["h"], "primitives": [
        assign(F("h", "d"), hexv(0x77))]}]})
    eng = Engine(j)
    eng.table_set_default("t", "fwd", [1])
    assert eng.process(0, pkt())[0][1][4:8] == (0x77).to_bytes(4, "big")


def test_digest_callback_gets_learn_list_values():
    got = []
    eng = Engine(program(actions=[("dg", [], [{"op": "generate_digest", "parameters": [hexv(0), hexv(1)]}])]))
    eng.set_digest_callback(lambda name, lid, vals: got.append((name, lid, vals)))
    eng.process(0, pkt(a=9, c=0x1234))
    assert got == [("dg", 1, (9, 0x1234))]


def test_exit_stops_control_and_assert_drops():
    # as BMv2: `exit` marks the packet, the rest of its action still runs (port 3), and the
    # pipeline stops before its next node (the conditional would set port 4)
    j = program(actions=[("ex", [], [assign(F(SM, "egress_spec"), hexv(2)), {"op": "exit", "parameters": []},
                                     assign(F(SM, "egress_spec"), hexv(3))]),
                         ("four", [], [assign(F(SM, "egress_spec"), hexv(4))])])
    assert Engine(j).process(0, pkt()) == [(3, pkt())]
    ingress = j["pipelines"][0]
    ingress["conditionals"] = [{"name": "node_2", "id": 0, "expression": {"type": "bool", "value": True},
                                "true_next": "tbl_four", "false_next": None}]
    ingress["tables"][0]["next_tables"] = {"ex": "node_2", "four": "node_2"}
    ingress["tables"].append(dict(ingress["tables"][0], name="tbl_four", id=2, action_ids=[1], actions=["four"],
                                  next_tables={"four": None},
                                  default_entry={"action_id": 1, "action_const": True, "action_data": [],
                                                 "action_entry_const": True}))
    assert Engine(j).process(0, pkt()) == [(3, pkt())]
    ingress["tables"][0]["default_entry"] = dict(ingress["tables"][0]["default_entry"], action_id=1)
    assert Engine(j).process(0, pkt()) == [(4, pkt())]  # without the exit, the next node runs
    j = program(actions=[("as", [], [{"op": "assert", "parameters": [expr_param(op("==", F("h", "a"), hexv(1)))]}])])
    eng = Engine(j)
    assert eng.process(0, pkt(a=1)) == [(0, pkt(a=1))]
    assert eng.process(0, pkt(a=2)) == []


def test_action_selector_picks_member_by_hash():
    prof = {"name": "sel", "id": 0, "max_size": 8,
            "selector": {"algo": "crc16", "input": [F("h", "d")]}}
    eng = Engine(program(keys=[("a", "exact")], actions=[DROP, FWD], table_type="indirect_ws", profiles=[prof]))
    members = [eng.act_prof_add_member("sel", "fwd", [p]) for p in (1, 2, 3)]
    grp = eng.act_prof_create_group("sel")
    for mbr in members:
        eng.act_prof_add_member_to_group("sel", mbr, grp)
    eng.table_add("t", [Exact(1)], group=grp)
    for d in range(20):
        expect = 1 + hashes.crc16(d.to_bytes(4, "big")) % 3
        assert eng.process(0, pkt(d=d))[0][0] == expect
    eng.table_add("t", [Exact(2)], member=members[1])
    assert eng.process(0, pkt(a=2))[0][0] == 2


def test_priority_out_of_range_drops_and_queue_metadata():
    setpri = ("p", [("pri", 3)], [assign(F(SM, "priority"), rd(0)), assign(F(SM, "egress_spec"), hexv(1))])
    mark = ("mark", [], [assign(F("h", "a"), F(SM, "enq_qdepth")), assign(F("h", "b"), F(SM, "priority"))])
    eng = Engine(program(actions=[setpri], egress_actions=[mark]), priority_queues=2)
    eng.table_set_default("t", "p", [1])
    assert eng.process(0, pkt()) == [(1, pkt(a=0, b=1))]
    eng.table_set_default("t", "p", [2])
    assert eng.process(0, pkt()) == []


def test_without_field_aliases_simple_switch_sees_no_multicast_priority_or_queueing_metadata():
    """simple_switch reads these under their intrinsic_metadata / queueing_metadata names only:
    a JSON without p4c's field_aliases gets no multicast, priority or queue depths (as on BMv2)."""
    mc = ("mc", [], [assign(F(SM, "mcast_grp"), hexv(5)), assign(F(SM, "egress_spec"), hexv(2)),
                     assign(F(SM, "priority"), hexv(3))])
    mark = ("mark", [], [assign(F("h", "a"), F(SM, "deq_qdepth")), assign(F("h", "b"), F(SM, "priority")),
                         assign(F("h", "c"), F(SM, "egress_rid"))])
    j = program(actions=[mc], egress_actions=[mark])
    j["field_aliases"] = []
    eng = Engine(j, priority_queues=2)  # priority 3 would be out of range if it were read
    eng.mc_mgrp_create(5)
    eng.mc_node_associate(5, eng.mc_node_create(7, [1]))
    assert eng.process(0, pkt()) == [(2, pkt(a=0, b=3, c=0))]  # unicast to egress_spec, not dropped
    # only some queueing fields aliased: simple_switch fills none of them
    j["field_aliases"] = [a for a in FIELD_ALIASES if a[0] != "queueing_metadata.enq_timestamp"]
    assert Engine(j).program.sm("deq_qdepth") is None
    assert Engine(j).program.sm("mcast_grp") == Engine(j).program.field_index[(SM, "mcast_grp")]


def test_a_field_alias_names_its_field_in_the_json_too():
    mc = ("mc", [], [assign(F("intrinsic_metadata", "mcast_grp"), hexv(5))])
    eng = Engine(program(actions=[mc]))
    eng.mc_mgrp_create(5)
    eng.mc_node_associate(5, eng.mc_node_create(7, [1, 3]))
    assert sorted(p for p, _ in eng.process(0, pkt())) == [1, 3]


def test_traffic_manager_live_strict_priority_and_rate():
    import threading
    import time
    from p4target.engine.traffic_manager import TrafficManager
    tm = TrafficManager(queues_per_port=2, depth=3)
    sent = []
    done = threading.Event()

    def egress(port, packet, enq_us, enq_depth, deq_depth):
        sent.append((packet, enq_depth))
        if len(sent) == 5:
            done.set()

    clock = lambda: time.monotonic() * 1e6
    tm.set_port_rate(20.0, port=1)  # the port sends 20 packets/s: one every 50 ms
    now = clock()
    assert [tm.enqueue(1, 0, f"low{i}", now) for i in range(4)] == [True, True, True, False]  # depth 3
    assert tm.enqueue(1, 1, "high0", now) and tm.enqueue(1, 1, "high1", now)
    assert not tm.enqueue(1, 2, "bad", now)  # priority beyond the 2 queues
    start = time.monotonic()
    tm.start(egress, clock)
    try:
        assert done.wait(5)
    finally:
        tm.stop()
    elapsed = time.monotonic() - start
    assert [p for p, _ in sent] == ["high0", "high1", "low0", "low1", "low2"]
    assert [d for _, d in sent] == [0, 1, 0, 1, 2]
    assert elapsed >= 0.15  # 5 packets at 20 pps need at least 4 gaps of 50 ms (bucket holds 1)


def test_traffic_manager_queue_rates_are_per_queue_like_bmv2():
    import threading
    import time
    from p4target.engine.traffic_manager import TrafficManager
    tm = TrafficManager(queues_per_port=2, depth=8)
    sent = []
    done = threading.Event()

    def egress(port, packet, enq_us, enq_depth, deq_depth):
        sent.append(packet)
        if len(sent) == 4:
            done.set()

    clock = lambda: time.monotonic() * 1e6
    tm.set_rate(10.0, port=1)  # each of the two queues may send 10 packets/s
    now = clock()
    for name in ("high0", "high1"):
        tm.enqueue(1, 1, name, now)
    for name in ("low0", "low1"):
        tm.enqueue(1, 0, name, now)
    tm.start(egress, clock)
    try:
        assert done.wait(5)
    finally:
        tm.stop()
    # the high queue is paced on its own, so the low queue goes while high waits
    assert sent == ["high0", "low0", "high1", "low1"]


def test_live_engine_transmits_through_callback():
    import threading
    eng = Engine(program(actions=[FWD]))
    eng.table_set_default("t", "fwd", [5])
    got = []
    ev = threading.Event()
    eng.start(lambda port, data: (got.append((port, data)), ev.set()))
    try:
        eng.receive(1, pkt())
        assert ev.wait(5)
    finally:
        eng.stop()
    assert got == [(5, pkt())]


def test_random_and_truncated_frames_never_crash():
    import random
    from p4target.engine.sample_programs import l3_router
    from p4target.engine import Lpm
    eng = Engine(l3_router())
    eng.table_add("MyIngress.ipv4_lpm", [Lpm(0, 0)], "MyIngress.ipv4_forward", [1, 2])
    rnd = random.Random(7)
    for _ in range(2000):
        data = bytes(rnd.getrandbits(8) for _ in range(rnd.randrange(0, 80)))
        if rnd.random() < 0.5 and len(data) > 13:
            data = data[:12] + b"\x08\x00" + data[14:]
        for port, out in eng.process(rnd.randrange(0, 8), data):
            assert port in (0, 2)


def test_is_valid_key_and_multicast_queue_depth():
    j = program(keys=[("a", "exact")], actions=[DROP, FWD])
    j["pipelines"][0]["tables"][0]["key"].append(
        {"match_type": "exact", "name": "hdr.h.$valid$", "target": ["h", "$valid$"], "mask": None})
    eng = Engine(j)
    eng.table_add("t", [Exact(1), Exact(1)], "fwd", [3])
    assert eng.process(0, pkt())[0][0] == 3
    # two replicas queued on one port before egress: enq_qdepth 0 then 1
    mc = ("mc", [], [assign(F(SM, "mcast_grp"), hexv(1))])
    mark = ("mark", [], [assign(F("h", "a"), F(SM, "enq_qdepth")), assign(F("h", "b"), F(SM, "deq_qdepth"))])
    eng = Engine(program(actions=[mc], egress_actions=[mark]))
    eng.mc_group_set(1, [(4, 1), (4, 2)])
    assert sorted(eng.process(0, pkt())) == [(4, pkt(a=0, b=1)), (4, pkt(a=1, b=0))]


def test_clone_e2e_copies_egress_result_and_truncate_primitive():
    fwd = ("f", [], [assign(F(SM, "egress_spec"), hexv(1))])
    # egress: on the normal pass (instance_type 0) set b = 0x77 and clone E2E to session 4;
    # the clone (instance_type 2) records its instance type in a and truncates to 2 bytes
    eg = ("e", [], [])
    j = program(actions=[fwd], egress_actions=[eg])
    j["actions"][-1]["primitives"] = [
        assign(F("h", "b"), hexv(0x77)),
        {"op": "clone_egress_pkt_to_egress", "parameters": [hexv(4), hexv(2)]}]
    j["field_lists"].append({"id": 2, "name": "fl_0", "elements": []})  # p4c's empty list of a clone
    j["actions"].append({"name": "cl", "id": 20, "runtime_data": [], "primitives": [
        assign(F("h", "a"), F(SM, "instance_type")), {"op": "truncate", "parameters": [hexv(2)]}]})
    j["pipelines"][1]["conditionals"] = [{"name": "c", "id": 0,
                                          "expression": op("==", F(SM, "instance_type"), hexv(0)),
                                          "true_next": "te", "false_next": "clone_pass"}]
    j["pipelines"][1]["action_calls"] = [{"name": "clone_pass", "id": 0, "action_id": 20, "next_node": None}]
    j["pipelines"][1]["init_table"] = "c"
    eng = Engine(j)
    eng.mirroring_add(4, port=6)
    out = dict(eng.process(0, pkt()))
    assert out[1] == pkt(b=0x77)
    assert out[6] == bytes([2, 0x77])


def test_hit_miss_next_tables_and_header_copy_and_remove():
    hit_act = ("hitp", [], [assign(F(SM, "egress_spec"), hexv(1))])
    j = program(keys=[("a", "exact")], actions=[("miss", [], [assign(F(SM, "egress_spec"), hexv(2))]), hit_act])
    j["header_types"].append({"name": "h2_t", "id": 3, "fields": [["a", 8, False], ["b", 8, False],
                                                                   ["c", 16, False], ["d", 32, False]]})
    j["headers"].append({"name": "copy", "id": 3, "header_type": "h_t", "metadata": False})
    j["deparsers"][0]["order"] = ["h", "copy"]
    t = j["pipelines"][0]["tables"][0]
    t["next_tables"] = {"__HIT__": "on_hit", "__MISS__": "on_miss"}
    j["actions"] += [
        {"name": "dup", "id": 30, "runtime_data": [], "primitives": [
            {"op": "assign_header", "parameters": [{"type": "header", "value": "copy"}, {"type": "header", "value": "h"}]}]},
        {"name": "rm", "id": 31, "runtime_data": [], "primitives": [
            {"op": "remove_header", "parameters": [{"type": "header", "value": "h"}]}]}]
    j["pipelines"][0]["action_calls"] = [{"name": "on_hit", "id": 0, "action_id": 30, "next_node": None},
                                         {"name": "on_miss", "id": 1, "action_id": 31, "next_node": None}]
    eng = Engine(j)
    eng.table_add("t", [Exact(1)], "hitp")
    assert eng.process(0, pkt(tail=b"!")) == [(1, pkt() + pkt() + b"!")]
    assert eng.process(0, pkt(a=5, tail=b"!")) == [(2, b"!")]
