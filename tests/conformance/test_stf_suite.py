"""Every `tests/conformance/**/X.p4` with a sibling `X.stf` is one STF test case.

The program is compiled with `p4target.compiler.compile_file` (or, when a sibling `X.json`
exists, that BMv2 JSON is run instead) and the STF test runs on the embedded engine.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from p4target.stf import run_stf

ROOT = Path(__file__).parent
CASES = sorted(p for p in ROOT.rglob("*.p4") if p.with_suffix(".stf").exists())


def _bmv2_json(p4: Path) -> dict:
    sibling = p4.with_suffix(".json")
    if sibling.exists():
        return json.loads(sibling.read_text())
    try:
        from p4target.compiler import compile_file
    except ImportError:
        pytest.skip("p4target.compiler is not available yet")
    return compile_file(str(p4), include_dirs=(str(p4.parent),)).bmv2_json


@pytest.mark.parametrize("p4", CASES, ids=[str(p.relative_to(ROOT)) for p in CASES])
def test_stf(p4: Path) -> None:
    stf = p4.with_suffix(".stf")
    # gradlane's data plane runs with 8 strict-priority queues, as `make run` starts it
    queues = 8 if "gradlane" in p4.relative_to(ROOT).parts else 1
    result = run_stf(_bmv2_json(p4), stf.read_text(), str(stf), priority_queues=queues)
    assert result.ok, "\n".join(result.lines)
