"""Parser: select on two keys with masks, lookahead, verify -> parser_error, random."""
from p4target.engine import Engine
from p4target.engine.sample_programs import ERRORS, FIELD_ALIASES, STANDARD_METADATA, F, hexv, op

SM = "standard_metadata"


def parser_program(parse_states, primitives=()):
    return {
        "header_types": [{"name": "scalars_0", "id": 0, "fields": [["r", 8, False]]},
                         {"name": SM, "id": 1, "fields": STANDARD_METADATA},
                         {"name": "b_t", "id": 2, "fields": [["x", 4, False], ["y", 4, False]]}],
        "headers": [{"name": "scalars", "id": 0, "header_type": "scalars_0", "metadata": True},
                    {"name": SM, "id": 1, "header_type": SM, "metadata": True},
                    {"name": "b1", "id": 2, "header_type": "b_t", "metadata": False},
                    {"name": "b2", "id": 3, "header_type": "b_t", "metadata": False}],
        "errors": ERRORS, "field_aliases": FIELD_ALIASES,
        "parsers": [{"name": "parser", "id": 0, "init_state": "start", "parse_states": parse_states}],
        "deparsers": [{"name": "deparser", "id": 0, "order": ["b1", "b2"]}],
        "actions": [{"name": "a", "id": 0, "runtime_data": [], "primitives": list(primitives) + [
            {"op": "assign", "parameters": [F(SM, "egress_spec"), hexv(1)]}]}],
        "pipelines": [{"name": "ingress", "id": 0, "init_table": "c", "tables": [], "conditionals": [],
                       "action_calls": [{"name": "c", "id": 0, "action_id": 0, "next_node": None}]},
                      {"name": "egress", "id": 1, "init_table": None, "tables": [], "conditionals": []}],
    }


def extract(h):
    return {"op": "extract", "parameters": [{"type": "regular", "value": h}]}


DEFAULT = {"type": "default", "value": None, "mask": None, "next_state": None}


def test_select_two_keys_with_mask_and_lookahead():
    states = [
        {"name": "start", "id": 0, "parser_ops": [extract("b1")],
         # key = b1.x (4 bits -> 1 byte) ++ next 8 bits of the packet (lookahead)
         "transition_key": [F("b1", "x"), {"type": "lookahead", "value": [0, 8]}],
         "transitions": [{"type": "hexstr", "value": "0x0a20", "mask": "0x0ff0", "next_state": "two"}, DEFAULT]},
        {"name": "two", "id": 1, "parser_ops": [extract("b2")], "transition_key": [], "transitions": [DEFAULT]},
    ]
    # ingress writes b2.x, which only shows when b2 was parsed (valid)
    eng = Engine(parser_program(states, [{"op": "assign", "parameters": [F("b2", "x"), hexv(0xC)]}]))
    # b1.x = 0xa and the next byte's high nibble is 2: b2 parsed
    assert eng.process(0, bytes([0xA1, 0x2F, 0x99])) == [(1, bytes([0xA1, 0xCF, 0x99]))]
    # not matching: b2 is not parsed, its byte passes through as payload
    assert eng.process(0, bytes([0xB1, 0x2F])) == [(1, bytes([0xB1, 0x2F]))]
    assert eng.process(0, bytes([0xA1, 0x3F])) == [(1, bytes([0xA1, 0x3F]))]


def test_verify_failure_sets_parser_error_and_stops_parsing():
    states = [{"name": "start", "id": 0,
               "parser_ops": [extract("b1"),
                              {"op": "verify", "parameters": [op("==", F("b1", "x"), hexv(1)), hexv(2)]},
                              extract("b2")],
               "transition_key": [], "transitions": [DEFAULT]}]
    prims = [{"op": "assign", "parameters": [F("b1", "y"), F(SM, "parser_error")]}]
    eng = Engine(parser_program(states, prims))
    assert eng.process(0, bytes([0x10, 0x34])) == [(1, bytes([0x10, 0x34]))]
    # x != 1: NoMatch (2) lands in parser_error, b2 stays unparsed payload
    assert eng.process(0, bytes([0x20, 0x34])) == [(1, bytes([0x22, 0x34]))]


def test_random_stays_within_bounds():
    states = [{"name": "start", "id": 0, "parser_ops": [extract("b1")], "transition_key": [], "transitions": [DEFAULT]}]
    prims = [{"op": "modify_field_rng_uniform", "parameters": [F("b1", "y"), hexv(3), hexv(5)]}]
    eng = Engine(parser_program(states, prims))
    seen = {eng.process(0, b"\x00")[0][1][0] & 0xF for _ in range(200)}
    assert seen == {3, 4, 5}
