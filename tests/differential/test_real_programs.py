"""p4c's JSON of six large real-world programs (ONOS fabric, OMEC UP4, SONiC PINS fabric,
middleblock and WBB, SONiC DASH; p4c's `testdata/p4_16_samples`) loads on the embedded switch,
and the recorded differential cases replay on it with no packet, entry or counter differing
from what the real BMv2 did with the same JSON.

The fixtures (`fixtures/`, README.md there) were made with p4c and simple_switch_grpc built
locally; the cases by `scripts/differential_forwarding.py --record`. CI needs neither."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from p4target.engine import Engine
from scripts import differential_forwarding

FIXTURES = Path(__file__).parent / "fixtures"
MANIFEST = json.loads((FIXTURES / "manifest.json").read_text())
CASES = sorted(FIXTURES.glob("*.case.json"))


def test_the_fixtures_name_the_p4c_that_made_them():
    assert MANIFEST["p4c"]["version"] == "1.2.5.16" and MANIFEST["p4c"]["commit"]
    assert len(MANIFEST["programs"]) == 6


@pytest.mark.parametrize("name", sorted(MANIFEST["programs"]))
def test_p4c_json_loads_on_the_embedded_switch(name):
    entry = MANIFEST["programs"][name]
    bmv2_json = json.loads((FIXTURES / entry["json"]).read_text())
    engine = Engine(bmv2_json)
    assert engine.table_names()
    assert "source_info" not in (FIXTURES / entry["json"]).read_text()


def test_two_programs_have_a_recorded_case():
    assert {c.name.split(".")[0] for c in CASES} >= {"fabric", "pins_middleblock"}


def test_the_fabric_case_sends_packets_out_and_drops_others():
    """Its entries chain up enough for packets to leave; the PINS middleblock's random entries
    do not (its VRF, admit, route, next hop, neighbour and interface entries must agree), so
    that case covers its parser and drop paths only."""
    recording = json.loads((FIXTURES / "fabric.case.json").read_text())
    sent = [o for o in recording["outputs"] if o and o[0] != "switch exited"]
    assert 0 < len(sent) < len(recording["outputs"])


@pytest.mark.parametrize("case", CASES, ids=[c.name.split(".")[0] for c in CASES])
def test_the_embedded_switch_forwards_as_bmv2_did(case):
    recording = json.loads(case.read_text())
    p4c = differential_forwarding.Program(json.loads((FIXTURES / recording["json"]).read_text()),
                       (FIXTURES / recording["p4info"]).read_text())
    got, diff = differential_forwarding.replay(recording, p4c)
    assert len(got.outputs) == len(recording["packets"]) >= 100
    assert diff["entries_differing"] == [], diff
    assert diff["packets_differing"] == [], diff["examples"]
    assert diff["counters_differing"] == [], diff
