"""Bad BMv2 JSON gives a ProgramLoadError naming the problem, never a raw exception."""
import copy

import pytest

from p4target.engine import Engine, NoProgramError, ProgramLoadError
from p4target.engine.sample_programs import l3_router


@pytest.mark.parametrize("mutate, words", [
    (lambda j: j.pop("parsers"), "parsers: a program needs a parser"),
    (lambda j: j["pipelines"].pop(), "pipelines: simple_switch needs an 'egress' pipeline"),
    (lambda j: j["actions"][1]["primitives"].append({"op": "frobnicate", "parameters": []}),
     "actions[1].primitives[1].op: unknown primitive 'frobnicate'"),
    (lambda j: j["headers"][2].update(header_type="nope"), "headers[2].header_type: unknown header type 'nope'"),
    (lambda j: j["actions"][2]["primitives"][0]["parameters"][0].update(value=["ipv4", "nope"]),
     "actions[2].primitives[0].parameters[0].value: unknown field 'ipv4.nope'"),
    (lambda j: j["pipelines"][0]["tables"][0].pop("name"), 'pipelines[0].tables[0]: needs "name"'),
    (lambda j: j["field_aliases"].append(["intrinsic_metadata.x", ["standard_metadata", "nope"]]),
     "field_aliases[9][1]: unknown field 'standard_metadata.nope'"),
    (lambda j: j["actions"][1]["primitives"].append(
        {"op": "clone_ingress_pkt_to_egress", "parameters": [{"type": "hexstr", "value": "0x5"},
                                                              {"type": "hexstr", "value": "0x0"}]}),
     "actions[1].primitives[1].parameters[1]: 'clone_ingress_pkt_to_egress' names field list 0, which does "
     "not exist (simple_switch would abort on the copy)"),
    (lambda j: j["field_aliases"].append(["intrinsic_metadata.x"]),
     "field_aliases[9]: must be an array of 2 items, got 1"),
])
def test_bad_json_is_a_load_error(mutate, words):
    j = copy.deepcopy(l3_router())
    mutate(j)
    with pytest.raises(ProgramLoadError) as e:
        Engine(j)
    assert str(e.value) == words


def test_not_a_dict_and_no_program():
    with pytest.raises(ProgramLoadError):
        Engine([1, 2])
    with pytest.raises(NoProgramError):
        Engine().table_add("t", [1], "a")
