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

from p4target.engine import Engine, ProgramLoadError
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
    """Every program but those recorded as valid P4 that p4c refuses (`p4c_refuses`: the reason,
    also in README.md); a documented program p4c compiles again is a failure too."""
    refused = {name: e["error"] for name, e in PROGRAMS if "error" in e and "p4c_refuses" not in e}
    assert not refused, refused
    compiled = [name for name, e in PROGRAMS if "p4c_refuses" in e and "error" not in e]
    assert not compiled, compiled
    documented = {name for name, e in PROGRAMS if "p4c_refuses" in e}
    readme = (FIXTURES / "README.md").read_text()
    assert all(f"`{name}`" in readme for name in documented), documented


RUNS = [p for p in PROGRAMS if "json" in p[1] and "bmv2_refuses" not in p[1]]


@pytest.mark.parametrize("name,entry", RUNS, ids=[name for name, _ in RUNS])
def test_p4c_json_passes_on_the_embedded_switch(name: str, entry: dict) -> None:
    stf = FIXTURES / entry["stf"]
    program = json.loads((FIXTURES / entry["json"]).read_text())
    result = run_stf(program, stf.read_text(), str(stf), priority_queues=entry["priority_queues"])
    assert result.ok, "\n".join(result.lines)


BMV2_REFUSES = [p for p in PROGRAMS if "bmv2_refuses" in p[1]]


@pytest.mark.parametrize("name,entry", BMV2_REFUSES, ids=[name for name, _ in BMV2_REFUSES])
def test_p4c_json_bmv2_refuses_the_embedded_switch_refuses_too(name: str, entry: dict) -> None:
    """p4c's JSON that real BMv2 refuses at load (the reason is in the manifest): the embedded
    switch, as strict as BMv2, refuses it with the JSON path."""
    program = json.loads((FIXTURES / entry["json"]).read_text())
    with pytest.raises(ProgramLoadError, match=r"^pipelines\[|^actions\[|^parsers\[|^deparsers\["):
        Engine(program)
