"""Header stacks (extract next, push_front/pop_front), checksum verification, direct
counters and meters, log_msg, on hand-built BMv2 JSON."""
from p4target.engine import Engine, Exact, GREEN, RED
from p4target.engine.sample_programs import ERRORS, FIELD_ALIASES, STANDARD_METADATA, F, expr_param, hexv, op
from p4target.engine import hashes

SM = "standard_metadata"


def stack_program(primitives):
    """Parses up to 3 one-byte `s` headers while the byte's top bit is set; the ingress runs
    `primitives` once and sends to port 1; the deparser emits s[0..2]."""
    return {
        "header_types": [{"name": "scalars_0", "id": 0, "fields": []},
                         {"name": SM, "id": 1, "fields": STANDARD_METADATA},
                         {"name": "s_t", "id": 2, "fields": [["more", 1, False], ["v", 7, False]]}],
        "headers": [{"name": "scalars", "id": 0, "header_type": "scalars_0", "metadata": True},
                    {"name": SM, "id": 1, "header_type": SM, "metadata": True}] +
                   [{"name": f"s[{i}]", "id": 2 + i, "header_type": "s_t", "metadata": False} for i in range(3)],
        "header_stacks": [{"name": "s", "id": 0, "header_type": "s_t", "size": 3, "header_ids": [2, 3, 4]}],
        "errors": ERRORS, "field_aliases": FIELD_ALIASES,
        "parsers": [{"name": "parser", "id": 0, "init_state": "start", "parse_states": [
            {"name": "start", "id": 0,
             "parser_ops": [{"op": "extract", "parameters": [{"type": "stack", "value": "s"}]}],
             "transition_key": [{"type": "stack_field", "value": ["s", "more"]}],
             "transitions": [{"type": "hexstr", "value": "0x01", "mask": None, "next_state": "start"},
                             {"type": "default", "value": None, "mask": None, "next_state": None}]}]}],
        "deparsers": [{"name": "deparser", "id": 0, "order": ["s[0]", "s[1]", "s[2]"]}],
        "actions": [{"name": "a", "id": 0, "runtime_data": [], "primitives": primitives + [
            {"op": "assign", "parameters": [F(SM, "egress_spec"), hexv(1)]}]}],
        "pipelines": [{"name": "ingress", "id": 0, "init_table": "c", "tables": [], "conditionals": [],
                       "action_calls": [{"name": "c", "id": 0, "action_id": 0, "next_node": None}]},
                      {"name": "egress", "id": 1, "init_table": None, "tables": [], "conditionals": []}],
        "checksums": [], "calculations": [],
    }


def test_stack_extract_stops_at_bottom_and_out_of_bounds_sets_error():
    out_of_bounds = op("==", F(SM, "parser_error"), hexv(3))  # StackOutOfBounds
    choose = {"type": "expression", "value": {"op": "?", "left": hexv(0x7f), "right": hexv(0),
                                              "cond": out_of_bounds}}
    j = stack_program([{"op": "assign", "parameters": [F("s[0]", "v"), expr_param(choose)]}])
    eng = Engine(j)
    # two headers parsed (the second has more=0), 0x33 stays payload; no error: v = 0
    assert eng.process(0, bytes([0x81, 0x02, 0x33])) == [(1, bytes([0x80, 0x02, 0x33]))]
    # four headers want to be parsed into a stack of three
    assert eng.process(0, bytes([0x81, 0x82, 0x83, 0x84])) == [(1, bytes([0xff, 0x82, 0x83, 0x84]))]


def test_push_front_and_pop_front():
    push = stack_program([{"op": "push", "parameters": [{"type": "header_stack", "value": "s"}, hexv(1)]},
                          {"op": "add_header", "parameters": [{"type": "header", "value": "s[0]"}]},
                          {"op": "assign", "parameters": [F("s[0]", "v"), hexv(0x55)]}])
    assert Engine(push).process(0, bytes([0x81, 0x02])) == [(1, bytes([0x55, 0x81, 0x02]))]
    pop = stack_program([{"op": "pop", "parameters": [{"type": "header_stack", "value": "s"}, hexv(1)]}])
    assert Engine(pop).process(0, bytes([0x81, 0x02, 0x99])) == [(1, bytes([0x02, 0x99]))]


def csum_program():
    """h = {x:16, y:16, ck:16}; verify_checksum(csum16 over x, y) into checksum_error,
    the ingress copies checksum_error into x and forwards to port 1."""
    return {
        "header_types": [{"name": "scalars_0", "id": 0, "fields": []},
                         {"name": SM, "id": 1, "fields": STANDARD_METADATA},
                         {"name": "h_t", "id": 2, "fields": [["x", 16, False], ["y", 16, False], ["ck", 16, False]]}],
        "headers": [{"name": "scalars", "id": 0, "header_type": "scalars_0", "metadata": True},
                    {"name": SM, "id": 1, "header_type": SM, "metadata": True},
                    {"name": "h", "id": 2, "header_type": "h_t", "metadata": False}],
        "errors": ERRORS, "field_aliases": FIELD_ALIASES,
        "parsers": [{"name": "parser", "id": 0, "init_state": "start", "parse_states": [
            {"name": "start", "id": 0,
             "parser_ops": [{"op": "extract", "parameters": [{"type": "regular", "value": "h"}]}],
             "transition_key": [], "transitions": [{"type": "default", "value": None, "mask": None, "next_state": None}]}]}],
        "deparsers": [{"name": "deparser", "id": 0, "order": ["h"]}],
        "calculations": [{"name": "ck", "id": 0, "algo": "csum16", "input": [F("h", "x"), F("h", "y")]}],
        "checksums": [{"name": "c", "id": 0, "target": ["h", "ck"], "type": "generic", "calculation": "ck",
                       "verify": True, "update": False, "if_cond": None}],
        "counter_arrays": [{"name": "t_ctr", "id": 0, "is_direct": True, "binding": "t", "size": 4}],
        "meter_arrays": [{"name": "t_mtr", "id": 0, "is_direct": True, "binding": "t", "size": 4,
                          "rate_count": 2, "type": "packets", "result_target": ["h", "y"]}],
        "actions": [{"name": "a", "id": 0, "runtime_data": [], "primitives": [
            {"op": "assign", "parameters": [F("h", "x"), F(SM, "checksum_error")]},
            {"op": "log_msg", "parameters": [{"type": "string", "value": "x={} port={}"},
                                             {"type": "parameters_vector", "value": [F("h", "x"), F(SM, "ingress_port")]}]},
            {"op": "assign", "parameters": [F(SM, "egress_spec"), hexv(1)]}]}],
        "pipelines": [{"name": "ingress", "id": 0, "init_table": "t", "conditionals": [],
                       "tables": [{"name": "t", "id": 0, "type": "simple", "match_type": "exact", "max_size": 4,
                                   "with_counters": True,
                                   "direct_meters": "t_mtr",
                                   "key": [{"match_type": "exact", "name": "h.ck", "target": ["h", "ck"], "mask": None}],
                                   "action_ids": [0], "actions": ["a"], "base_default_next": None,
                                   "next_tables": {"a": None},
                                   "default_entry": {"action_id": 0, "action_const": False, "action_data": [],
                                                     "action_entry_const": False}}]},
                      {"name": "egress", "id": 1, "init_table": None, "tables": [], "conditionals": []}],
    }


def test_verify_checksum_sets_checksum_error_and_log_msg_logs():
    logs = []
    eng = Engine(csum_program(), log=logs.append)
    good = hashes.csum16(bytes.fromhex("12345678"))
    data = bytes.fromhex("12345678") + good.to_bytes(2, "big")
    assert eng.process(3, data)[0][1][:2] == b"\x00\x00"
    bad = bytes.fromhex("12345678") + ((good + 1) & 0xFFFF).to_bytes(2, "big")
    assert eng.process(3, bad)[0][1][:2] == b"\x00\x01"
    assert logs == ["x=0 port=3", "x=1 port=3"]


def test_direct_counter_and_direct_meter_on_hit():
    now = [0.0]
    eng = Engine(csum_program(), clock_us=lambda: now[0])
    h = eng.table_add("t", [Exact(0x0001)], "a")
    data = bytes.fromhex("ffff00000001")
    out = eng.process(0, data)
    assert out[0][1][2:4] == GREEN.to_bytes(2, "big")
    assert eng.table_entry_counter("t", h) == (1, 6)
    eng.table_entry_meter_set("t", h, [(0.0, 0), (0.0, 0)])  # zero rates: everything RED
    assert eng.process(0, data)[0][1][2:4] == RED.to_bytes(2, "big")
    assert eng.table_entry_counter("t", h) == (2, 12)
    assert eng.direct_counter_table("t_ctr") == "t"


def test_header_union_set_valid_invalidates_the_other_member():
    j = stack_program([{"op": "add_header", "parameters": [{"type": "header", "value": "s[1]"}]},
                       {"op": "assign", "parameters": [F("s[1]", "v"), hexv(0x11)]}])
    # treat s[0] and s[1] as the two members of a union u
    j["header_union_types"] = [{"name": "u_t", "id": 0, "headers": [["a", "s_t"], ["b", "s_t"]]}]
    j["header_unions"] = [{"name": "u", "id": 0, "union_type": "u_t", "header_ids": [2, 3]}]
    eng = Engine(j)
    # s[0] was parsed (more=0 stops); making s[1] valid drops s[0] from the output
    assert eng.process(0, bytes([0x05, 0xAA])) == [(1, bytes([0x11, 0xAA]))]


def test_union_stack_field_in_a_select_key_reads_the_last_extracted_element():
    """BMv2's `union_stack_field` transition key: u.next.a is extracted while its `more` bit is
    set; the ingress then writes u[1].a.v, which only shows if u[1] was parsed."""
    j = stack_program([{"op": "assign", "parameters": [F("u[1].a", "v"), hexv(0x7F)]}])
    j["header_types"].append({"name": "b_t", "id": 3, "fields": [["x", 8, False]]})
    j["headers"] = j["headers"][:2] + [
        {"name": f"u[{i}].{m}", "id": 2 + 2 * i + k, "header_type": t, "metadata": False}
        for i in range(2) for k, (m, t) in enumerate((("a", "s_t"), ("b", "b_t")))]
    j["header_stacks"] = []
    j["header_union_types"] = [{"name": "U", "id": 0, "headers": [["a", "s_t"], ["b", "b_t"]]}]
    j["header_unions"] = [{"name": f"u[{i}]", "id": i, "union_type": "U", "header_ids": [2 + 2 * i, 3 + 2 * i]}
                          for i in range(2)]
    j["header_union_stacks"] = [{"name": "u", "id": 0, "union_type": "U", "header_union_ids": [0, 1]}]
    state = j["parsers"][0]["parse_states"][0]
    state["parser_ops"] = [{"op": "extract", "parameters": [{"type": "union_stack", "value": ["u", "a"]}]}]
    state["transition_key"] = [{"type": "union_stack_field", "value": ["u", "a", "more"]}]
    j["deparsers"][0]["order"] = ["u[0].a", "u[0].b", "u[1].a", "u[1].b"]
    eng = Engine(j)
    assert eng.process(0, bytes([0x81, 0x02, 0x77])) == [(1, bytes([0x81, 0x7F, 0x77]))]
    assert eng.process(0, bytes([0x01, 0x02, 0x77])) == [(1, bytes([0x01, 0x02, 0x77]))]  # more=0: one element


def test_assignment_to_a_stack_element_field_in_p4c_shape_and_older_operator_name():
    """`s[i].v = 0x33` as p4c writes it: the parameter holds an expression node (access_field over
    a stack element); `dereference_stack` is BMv2's older name of dereference_header_stack."""
    for deref in ("dereference_header_stack", "dereference_stack"):
        element = {"type": "expression", "value": {"op": deref, "left": {"type": "header_stack", "value": "s"},
                                                   "right": hexv(1)}}
        target = {"type": "expression", "value": {"type": "expression", "value": {
            "op": "access_field", "left": element, "right": 1}}}
        eng = Engine(stack_program([{"op": "assign", "parameters": [target, hexv(0x33)]}]))
        assert eng.process(0, bytes([0x81, 0x02, 0x99])) == [(1, bytes([0x81, 0x33, 0x99]))]
