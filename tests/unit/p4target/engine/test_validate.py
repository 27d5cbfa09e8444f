"""The loader is at least as strict as BMv2's: every malformed shape BMv2 refuses (and JSON that
could not run) is refused at load time, with the JSON path in the message."""
import copy
import random

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from p4target.engine import Engine, ProgramLoadError
from p4target.engine.loader.schema import validate
from p4target.engine.sample_programs import F, hexv, l3_router, op


def _fwd(j):
    return next(a for a in j["actions"] if a["name"] == "MyIngress.ipv4_forward")


def _lpm(j):
    return j["pipelines"][0]["tables"][1]


def _set(path_fn, **kv):
    def mutate(j):
        path_fn(j).update(kv)
    return mutate


# (mutation, exact message)
REFUSED = [
    (lambda j: j["pipelines"][0]["conditionals"][0].update(expression={"value": hexv(1)}),
     'pipelines[0].conditionals[0].expression: expression node needs "type"'),
    (lambda j: j["pipelines"][0]["conditionals"][0]["expression"]["value"].update(op="frob"),
     "pipelines[0].conditionals[0].expression.value.op: unknown operator 'frob'"),
    (lambda j: j["pipelines"][0]["conditionals"][0].update(expression={"type": "lookahead", "value": [0, 8]}),
     "pipelines[0].conditionals[0].expression.type: invalid type in expression: 'lookahead'"),
    (lambda j: j["pipelines"][0]["conditionals"][0]["expression"]["value"].pop("left"),
     'pipelines[0].conditionals[0].expression.value: an operation needs "left" and "right" (null when unused)'),
    (lambda j: j["pipelines"][0]["conditionals"][0].update(expression=op("==", F("ipv4", "ttl"), {"type": "bool", "value": True})),
     "pipelines[0].conditionals[0].expression.value: operator '==' needs operands of one kind, got data and bool"),
    (lambda j: j["pipelines"][0]["conditionals"][0].update(expression={"type": "expression", "value": {
        "op": "?", "cond": F("ipv4", "ttl"), "left": {"type": "bool", "value": True}, "right": {"type": "bool", "value": False}}}),
     "pipelines[0].conditionals[0].expression.value.cond: the condition of '?' must be boolean, got data"),
    (lambda j: j["pipelines"][0]["conditionals"][0].update(expression={"type": "expression", "value": {
        "op": "access_field", "left": F("ipv4", "ttl"), "right": 0}}),
     "pipelines[0].conditionals[0].expression.value.left: 'access_field' needs a header on its left"),
    (lambda j: j.update(deparsers=[]),
     "deparsers: a program needs a deparser (simple_switch cannot send a packet without one)"),
    (lambda j: j["parsers"][0]["parse_states"][0]["transitions"][0].update(next_state="nowhere"),
     "parsers[0].parse_states[0].transitions[0].next_state: unknown parse state 'nowhere'"),
    (lambda j: j["parsers"][0].update(init_state="nowhere"), "parsers[0].init_state: unknown parse state 'nowhere'"),
    (lambda j: j["parsers"][0]["parse_states"][0]["transitions"][0].update(value="0x08"),
     "parsers[0].parse_states[0].transitions[0].value: transition value has 1 byte(s), the key 2"),
    (lambda j: j["parsers"][0]["parse_states"][0]["transitions"][0].update(value="zz"),
     "parsers[0].parse_states[0].transitions[0].value: must be a hexadecimal string, got a string"),
    (lambda j: j["parsers"][0]["parse_states"][0]["parser_ops"][0].update(op="skip"),
     "parsers[0].parse_states[0].parser_ops[0].op: parser op 'skip' not supported"),
    (lambda j: j["parsers"][0]["parse_states"][0]["parser_ops"][0]["parameters"].append(hexv(1)),
     "parsers[0].parse_states[0].parser_ops[0].parameters: must be an array of 1 items, got 2"),
    (lambda j: j["pipelines"][0]["conditionals"][0].update(true_next="nowhere"),
     "pipelines[0].conditionals[0].true_next: unknown control node 'nowhere'"),
    (lambda j: j["pipelines"][0].update(init_table="nowhere"), "pipelines[0].init_table: unknown control node 'nowhere'"),
    (lambda j: _lpm(j)["action_ids"].append(99), "pipelines[0].tables[1].action_ids[3]: unknown action id 99"),
    (lambda j: j["actions"][1].update(id=0), "actions[1].id: duplicate id 0"),
    (lambda j: j["header_types"][3]["fields"][0].__setitem__(1, "4"),
     "header_types[3].fields[0][1]: must be an integer, got a string"),
    (lambda j: j["header_types"][3]["fields"].append(["x", 8, False, True, 1]),
     "header_types[3].fields[12]: a field is [name, width] or [name, width, signed(, saturating)], got 5 items"),
    (lambda j: j["headers"][2].update(metadata="no"), "headers[2].metadata: must be a boolean, got a string"),
    (lambda j: j["headers"][3].update(id=2), "headers[3].id: duplicate id 2"),
    (lambda j: j["actions"][1]["primitives"][0].update(parameters=[]),
     "actions[1].primitives[0].parameters: primitive 'mark_to_drop' takes 1 parameter(s), got 0"),
    (lambda j: _fwd(j)["primitives"][0]["parameters"][1].update(value=5),
     "actions[2].primitives[0].parameters[1].value: runtime_data 5 but the action has 2 parameter(s)"),
    (lambda j: _fwd(j)["primitives"][0]["parameters"][1].update(type="frob"),
     "actions[2].primitives[0].parameters[1].type: parameter type 'frob' not supported"),
    (lambda j: _fwd(j)["primitives"][0]["parameters"][1].pop("value"),
     'actions[2].primitives[0].parameters[1]: needs "value"'),
    (lambda j: j["actions"][3]["primitives"][0]["parameters"][0].update(value="nope"),
     "actions[3].primitives[0].parameters[0].value: unknown counter array 'nope'"),
    (lambda j: j["actions"][3]["primitives"][0]["parameters"].__setitem__(0, hexv(0)),
     "actions[3].primitives[0].parameters[0].type: primitive 'count' needs counter_array here, got 'hexstr'"),
    (lambda j: j["actions"][1]["primitives"][0]["parameters"].__setitem__(0, F("ipv4", "ttl")),
     "actions[1].primitives[0].parameters[0].type: primitive 'mark_to_drop' needs header here, got 'field'"),
    (lambda j: _lpm(j)["next_tables"].pop("NoAction"),
     "pipelines[0].tables[1].next_tables: needs exactly one key per action of the table (check 'NoAction')"),
    (lambda j: _lpm(j)["next_tables"].update(__HIT__=None),
     'pipelines[0].tables[1].next_tables: with "__HIT__" or "__MISS__", next_tables has exactly those two keys'),
    (lambda j: _lpm(j)["default_entry"].update(action_id=2),
     "pipelines[0].tables[1].default_entry.action_data: action 'MyIngress.ipv4_forward' takes 2 argument(s), got 0"),
    (lambda j: _lpm(j)["default_entry"].pop("action_data"),
     'pipelines[0].tables[1].default_entry: needs "action_data"'),
    (lambda j: _lpm(j)["key"].append(dict(_lpm(j)["key"][0])),
     "pipelines[0].tables[1].key: a table has at most one lpm match field"),
    (lambda j: _lpm(j)["key"][0].update(match_type="fuzzy"),
     "pipelines[0].tables[1].key[0].match_type: invalid match type 'fuzzy'"),
    (lambda j: _lpm(j).pop("max_size"), 'pipelines[0].tables[1]: a table needs "max_size" or "entries"'),
    (lambda j: _lpm(j).update(match_type=None), "pipelines[0].tables[1].match_type: must be a string, got null"),
    (lambda j: _lpm(j).update(type="indirect"), 'pipelines[0].tables[1]: an indirect table needs "action_profile" (or "act_prof_name", the older format)'),
    (lambda j: _lpm(j).update(entries=[{"match_key": [], "action_entry": {"action_id": 1, "action_data": []}}]),
     "pipelines[0].tables[1].entries[0].match_key: must be an array of 1 items, got 0"),
    (lambda j: _lpm(j).pop("next_tables"), 'pipelines[0].tables[1]: needs "next_tables"'),
    (lambda j: j["pipelines"][0]["tables"].append(dict(_lpm(j), id=7)),
     "pipelines[0].tables[2]: duplicate control node name or id ('MyIngress.ipv4_lpm', 7)"),
    (lambda j: j["pipelines"][0].update(action_calls=[{"name": "call", "id": 0, "action_id": 2, "next_node": None}]),
     "pipelines[0].action_calls[0].action_id: action 'MyIngress.ipv4_forward' takes parameters: "
     "it cannot be called directly"),
    (lambda j: j["calculations"][0].update(algo="md5"), "calculations[0].algo: unknown hash algorithm 'md5'"),
    (lambda j: j["calculations"][0]["input"].append({"type": "hexstr", "value": "0x1"}),
     'calculations[0].input[11]: needs "bitwidth"'),
    (lambda j: j["checksums"][0].update(calculation="nope"), "checksums[0].calculation: unknown calculation 'nope'"),
    (lambda j: j["checksums"][0].update(target=["ipv4", "nope"]), "checksums[0].target: unknown field 'ipv4.nope'"),
    (lambda j: j["errors"].append(["Mine", 1]), "errors[7]: duplicate name or value ('Mine', 1)"),
    (lambda j: j["errors"].append(["Mine", 2 ** 31 - 1]), "errors[7][1]: 2147483647 is out of range [0, 2147483646]"),
    (lambda j: j.update(__meta__={"version": [3, 0]}), "__meta__.version: BMv2 needs JSON format major version 2, got 3"),
    (lambda j: j.update(__meta__={"version": [2, 99]}),
     "__meta__.version: the newest JSON format BMv2 reads is 2.24, got 2.99"),
    (lambda j: j.update(actions={}), "actions: must be an array, got an object"),
    (lambda j: j["counter_arrays"].append({"name": "d", "id": 1, "is_direct": True, "binding": "nope", "size": 0}),
     "counter_arrays[1].binding: unknown table 'nope'"),
    (lambda j: j.update(extern_instances=[{"name": "e", "id": 0, "type": "Widget", "attribute_values": []}]),
     "extern_instances[0].type: extern type 'Widget' is not supported by this switch"),
    (lambda j: j.update(register_arrays=[{"name": "r", "id": 0, "size": 4, "bitwidth": 0}]),
     "register_arrays[0].bitwidth: 0 is out of range [1, 65536]"),
]


@pytest.mark.parametrize("mutate, message", REFUSED, ids=[msg.split(":")[0] for _, msg in REFUSED])
def test_malformed_shapes_are_refused_with_their_json_path(mutate, message):
    j = copy.deepcopy(l3_router())
    mutate(j)
    with pytest.raises(ProgramLoadError) as e:
        validate(j)
    assert str(e.value) == message
    with pytest.raises(ProgramLoadError) as e:
        Engine(j)
    assert str(e.value) == message


def test_the_sample_program_is_valid_bmv2_json():
    validate(l3_router())


def test_a_transition_value_of_the_key_width_in_fewer_digits_is_accepted():
    j = l3_router()
    j["parsers"][0]["parse_states"][0]["transitions"][0]["value"] = "0x800"  # 2 bytes, as BMv2 reads it
    Engine(j)


def _bare_parameter(j):  # `(ttl + 0xff) & 0xff` as today's compiler writes it: value is a bare op node
    prim = _fwd(j)["primitives"][3]
    prim["parameters"][1] = op("&", op("+", F("ipv4", "ttl"), hexv(0xff)), hexv(0xff))


def _bare_operand(j):
    j["pipelines"][0]["conditionals"][0]["expression"]["value"]["right"] = {
        "op": "valid", "left": None, "right": {"type": "header", "value": "ipv4"}}


def _runtime_data_in_expression(j):
    prim = _fwd(j)["primitives"][3]
    prim["parameters"][1] = {"type": "expression", "value": op("&", {"type": "runtime_data", "value": 0}, hexv(0xff))}


def _optional_key(j):
    _lpm(j)["key"][0]["match_type"] = "optional"
    _lpm(j)["match_type"] = "ternary"


def _preserving_field_list(j):
    j["actions"][0]["primitives"] = [{"op": "resubmit_preserving_field_list", "parameters": [hexv(0)]}]


def _log_msg_without_vector(j):
    j["actions"][0]["primitives"] = [{"op": "log_msg", "parameters": [{"type": "string", "value": "hi"}]}]


def _typed_node_as_operation(j):
    cond = j["pipelines"][0]["conditionals"][0]
    cond["expression"] = {"type": "expression", "value": cond["expression"]}


def _access_field_offset_as_hexstr(j):
    j["pipelines"][0]["conditionals"][0]["expression"] = op("d2b", None, {"type": "expression", "value": {
        "op": "access_field", "left": {"type": "header", "value": "ipv4"}, "right": hexv(7)}})


COMPILER_SHAPES = [
    (_access_field_offset_as_hexstr,
     "pipelines[0].conditionals[0].expression.value.right.value.right: must be an integer, got an object"),
    (_typed_node_as_operation, 'pipelines[0].conditionals[0].expression.value: an operation needs "op" '
                               '(this is a typed node inside an expression node)'),
    (_bare_parameter, 'actions[2].primitives[3].parameters[1].value: expression node needs "type" '
                      '(a bare {"op", "left", "right"} node must be {"type": "expression", "value": {...}})'),
    (_bare_operand, 'pipelines[0].conditionals[0].expression.value.right: expression node needs "type" '
                    '(a bare {"op", "left", "right"} node must be {"type": "expression", "value": {...}})'),
    (_runtime_data_in_expression,
     "actions[2].primitives[3].parameters[1].value.value.left.type: invalid type in expression: 'runtime_data'"),
    (_optional_key, "pipelines[0].tables[1].key[0].match_type: invalid match type 'optional'"),
    (_preserving_field_list, "actions[0].primitives[0].op: unknown primitive 'resubmit_preserving_field_list'"),
    (_log_msg_without_vector, "actions[0].primitives[0].parameters: primitive 'log_msg' takes 2 parameter(s), got 1"),
]


@pytest.mark.parametrize("mutate, message", COMPILER_SHAPES, ids=[m.__name__.strip("_") for m, _ in COMPILER_SHAPES])
def test_shapes_bmv2_refuses_that_the_embedded_compiler_once_wrote(mutate, message):
    j = copy.deepcopy(l3_router())
    mutate(j)
    with pytest.raises(ProgramLoadError) as e:
        validate(j)
    assert str(e.value) == message


def test_deeply_nested_expressions_are_a_load_error_not_a_crash():
    j = l3_router()
    node = hexv(1)
    for _ in range(5000):
        node = op("~", None, node)
    j["pipelines"][0]["conditionals"][0]["expression"] = op("d2b", None, node)
    with pytest.raises(ProgramLoadError, match=r"expression: expression nested more than \d+ operations deep"):
        Engine(j)


def _paths(node, path=()):
    yield path
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, path + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, path + (i,))


_JUNK = [None, 0, -1, 7, "x", "0x1", "ipv4", [], {}, True, 1.5, [1, 2], ["ipv4", "ttl"],
         {"op": "+", "left": None, "right": None}, {"type": "field", "value": ["ipv4", "nope"]},
         {"type": "expression", "value": {"op": "+"}}, {"type": "hexstr", "value": "0xzz"}, 10 ** 30]


@pytest.mark.slow
def test_seeded_mutations_load_or_fail_with_a_load_error_and_loaded_ones_run():
    """1500 random one-place mutations of a valid program: each one either loads (and runs
    packets without crashing) or raises ProgramLoadError, never any other exception."""
    rng = random.Random(17)
    base = l3_router()
    paths = [p for p in _paths(base) if p]
    frames = [bytes(Ether(dst="ff:ff:ff:ff:ff:ff") / IP(dst="10.0.0.1") / UDP() / b"x"), b"\x00" * 5, bytes(60)]
    loaded = refused = 0
    for _ in range(1500):
        j = copy.deepcopy(base)
        path = rng.choice(paths)
        parent = j
        for k in path[:-1]:
            parent = parent[k]
        last = path[-1]
        if isinstance(parent, dict) and rng.random() < 0.3:
            del parent[last]
        elif isinstance(parent, list) and rng.random() < 0.15:
            parent.insert(last, copy.deepcopy(parent[last]))
        else:
            parent[last] = copy.deepcopy(rng.choice(_JUNK))
        try:
            eng = Engine(j)
        except ProgramLoadError:
            refused += 1
            continue
        loaded += 1
        for f in frames:
            eng.process(1, f)
    assert refused > 500 and loaded > 100, (refused, loaded)
