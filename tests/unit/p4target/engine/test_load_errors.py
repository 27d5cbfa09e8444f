"""Bad BMv2 JSON gives a ProgramLoadError naming the problem, never a raw exception."""
import copy

import pytest

from p4target.engine import Engine, NoProgramError, ProgramLoadError
from p4target.engine.sample_programs import l3_router


@pytest.mark.parametrize("mutate, words", [
    (lambda j: j.pop("parsers"), "no parser"),
    (lambda j: j["pipelines"].pop(), "no 'egress' pipeline"),
    (lambda j: j["actions"][1]["primitives"].append({"op": "frobnicate", "parameters": []}), "frobnicate"),
    (lambda j: j["headers"][2].update(header_type="nope"), "unknown type 'nope'"),
    (lambda j: j["actions"][2]["primitives"][0]["parameters"][0].update(value=["ipv4", "nope"]), "ipv4.nope"),
    (lambda j: j["pipelines"][0]["tables"][0].pop("name"), "malformed"),
])
def test_bad_json_is_a_load_error(mutate, words):
    j = copy.deepcopy(l3_router())
    mutate(j)
    with pytest.raises(ProgramLoadError, match=words.replace("(", r"\(").replace(")", r"\)")):
        Engine(j)


def test_not_a_dict_and_no_program():
    with pytest.raises(ProgramLoadError):
        Engine([1, 2])
    with pytest.raises(NoProgramError):
        Engine().table_add("t", [1], "a")
