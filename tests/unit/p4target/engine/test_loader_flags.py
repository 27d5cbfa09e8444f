"""Boolean flags of BMv2 JSON are read as BMv2 reads them (jsoncpp's asBool): true/false, any
number (non-zero is true) and null (false) load; a string, an array or an object makes
simple_switch 1.15.5 abort at load ("Json::LogicError: Value is not convertible to bool") and is
refused here. p4c writes header field signedness as 0/1 (`["is_ipv6", 1, 0]` in its DASH JSON)."""
import copy

import pytest

from p4target.engine import Engine, ProgramLoadError
from p4target.engine.sample_programs import l3_router


def _field(j):
    return j["header_types"][2]["fields"][0]  # ethernet_t's first field: [name, width(, signed)]


def _set_signed(j, v):
    _field(j)[2:] = [v]


# (site, setter) for each boolean flag the loader reads
SITES = [
    ("header_types[2].fields[0][2]", _set_signed),
    ("headers[2].metadata", lambda j, v: j["headers"][2].update(metadata=v)),
    ("counter_arrays[0].is_direct", lambda j, v: j["counter_arrays"][0].update(is_direct=v)),
    ("pipelines[0].tables[1].with_counters", lambda j, v: j["pipelines"][0]["tables"][1].update(with_counters=v)),
    ("pipelines[0].tables[1].support_timeout", lambda j, v: j["pipelines"][0]["tables"][1].update(support_timeout=v)),
    ("pipelines[0].tables[1].default_entry.action_entry_const",
     lambda j, v: j["pipelines"][0]["tables"][1]["default_entry"].update(action_entry_const=v)),
]
FALSE_LIKE = [0, 0.0, None]
REFUSED = [("true", "a string"), ([], "an array"), ({}, "an object")]


def _mutated(setter, v):
    j = copy.deepcopy(l3_router())
    setter(j, v)
    return j


@pytest.mark.parametrize("site,setter", SITES, ids=[s for s, _ in SITES])
@pytest.mark.parametrize("value", FALSE_LIKE, ids=repr)
def test_false_like_numbers_and_null_load_as_false(site, setter, value):
    Engine(_mutated(setter, value))


@pytest.mark.parametrize("site,setter", SITES, ids=[s for s, _ in SITES])
@pytest.mark.parametrize("value,kind", REFUSED, ids=[k for _, k in REFUSED])
def test_strings_arrays_and_objects_are_refused(site, setter, value, kind):
    with pytest.raises(ProgramLoadError) as refused:
        Engine(_mutated(setter, value))
    assert str(refused.value) == f"{site}: must be a boolean, got {kind}"


# a direct counter needs a binding, and a parsed header cannot be metadata: scalars can
TRUE_SITES = [(s, f) for s, f in SITES if not s.startswith(("counter_arrays", "headers"))] + [
    ("headers[0].metadata", lambda j, v: j["headers"][0].update(metadata=v))]


@pytest.mark.parametrize("site,setter", TRUE_SITES, ids=[s for s, _ in TRUE_SITES])
@pytest.mark.parametrize("value", [1, 2, -1, 1.5], ids=repr)
def test_non_zero_numbers_load_as_true(site, setter, value):
    Engine(_mutated(setter, value))


def test_a_flag_written_as_a_number_means_what_the_boolean_means():
    """`with_counters: 1` is `true` and `0` is `false`."""
    shapes = []
    for v in (True, 1, False, 0):
        j = _mutated(lambda j, v: j["pipelines"][0]["tables"][1].update(with_counters=v), v)
        shapes.append(Engine(j).table("MyIngress.ipv4_lpm").with_counters)
    assert shapes == [True, True, False, False]
