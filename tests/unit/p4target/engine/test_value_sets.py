"""Parser value sets filled at run time: the conformance program value_set.p4 with values."""
import os

import pytest

from p4target.compiler import compile_file
from p4target.engine import Engine
from p4target.engine.errors import InvalidEntryError

PROGRAM = os.path.join(os.path.dirname(__file__), "..", "..", "..", "conformance", "language", "value_set.p4")
H = "00000003" "00000004"


@pytest.fixture(scope="module")
def bmv2_json() -> dict:
    return compile_file(PROGRAM).bmv2_json


def run(engine: Engine, hexdata: str) -> str:
    out = engine.process(0, bytes.fromhex(hexdata))
    assert len(out) == 1
    return out[0][1].hex()


def test_json_lists_the_value_sets(bmv2_json: dict) -> None:
    assert bmv2_json["parse_vsets"] == [
        {"name": "VsParser.tagged", "id": 0, "compressed_bitwidth": 8, "max_size": 4},
        {"name": "VsParser.pairs", "id": 1, "compressed_bitwidth": 24, "max_size": 2}]


def test_values_added_at_run_time_select_their_state(bmv2_json: dict) -> None:
    e = Engine(bmv2_json)
    assert run(e, "20000002" + H + "7755") == "20000002" + H + "7755"
    e.parse_vset_add("VsParser.tagged", 0x20)
    assert run(e, "20000002" + H + "7755") == "20010002" + H + "7755"
    # the struct set holds kind ++ c unpadded (8 + 16 bits)
    assert run(e, "20000005" + H + "6655") == "20010005" + H + "6655"
    e.parse_vset_add("VsParser.pairs", 0x66_0005)
    assert run(e, "20000005" + H + "6655") == "20010005" + "00000003" "ffffffff" "6655"
    assert e.parse_vset_get("VsParser.pairs") == [0x660005]
    e.parse_vset_remove("VsParser.tagged", 0x20)
    assert run(e, "20000002" + H + "7755") == "20000002" + H + "7755"
    e.parse_vset_clear("VsParser.pairs")
    assert e.parse_vset_get("VsParser.pairs") == []


def test_value_set_limits(bmv2_json: dict) -> None:
    e = Engine(bmv2_json)
    with pytest.raises(InvalidEntryError, match="does not fit"):
        e.parse_vset_add("VsParser.tagged", 0x100)
    e.parse_vset_add("VsParser.pairs", 1)
    e.parse_vset_add("VsParser.pairs", 2)
    with pytest.raises(InvalidEntryError, match="full"):
        e.parse_vset_add("VsParser.pairs", 3)
