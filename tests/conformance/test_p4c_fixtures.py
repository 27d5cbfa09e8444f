"""p4c's BMv2 JSON of every conformance program passes that program's STF test on the embedded
switch.

The fixtures in `p4c_fixtures/` were made with a locally built p4c (`scripts/make_p4c_fixtures.py`;
its version and commit are in `p4c_fixtures/manifest.json` and README.md), so CI needs no p4c.
Each one runs with the copy of the STF test it was recorded with.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from p4target.stf import run_stf

FIXTURES = Path(__file__).parent / "p4c_fixtures"
MANIFEST = json.loads((FIXTURES / "manifest.json").read_text()) if (FIXTURES / "manifest.json").exists() else None
PROGRAMS = sorted(MANIFEST["programs"].items()) if MANIFEST else []


NOT_RECORDED = pytest.mark.skipif(MANIFEST is None, reason=(
    "p4c's fixtures are not recorded yet: run scripts/make_p4c_fixtures.py with a locally built "
    "p4c-bm2-ss (see p4c_fixtures/README.md)"))


@NOT_RECORDED
def test_fixtures_were_recorded_with_a_named_p4c() -> None:
    assert MANIFEST["p4c"]["version"] and MANIFEST["p4c"]["commit"]
    assert len(PROGRAMS) >= 80  # every conformance program with an STF test, when recorded


@NOT_RECORDED
def test_p4c_compiled_every_program() -> None:
    refused = {name: e["error"] for name, e in PROGRAMS if "error" in e}
    assert not refused, refused


@pytest.mark.parametrize("name,entry", [p for p in PROGRAMS if "json" in p[1]],
                         ids=[name for name, e in PROGRAMS if "json" in e])
def test_p4c_json_passes_on_the_embedded_switch(name: str, entry: dict) -> None:
    stf = FIXTURES / entry["stf"]
    program = json.loads((FIXTURES / entry["json"]).read_text())
    result = run_stf(program, stf.read_text(), str(stf), priority_queues=entry["priority_queues"])
    assert result.ok, "\n".join(result.lines)
