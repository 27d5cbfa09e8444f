"""`make check-compiler` (scripts/check_compiler.py): a run of p4c's samples compared with the
recorded pass list. The runs themselves need a p4c checkout and are not in CI; the comparison,
the record it writes and the refusal without a checkout are tested here."""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while it runs
    spec.loader.exec_module(module)
    return module


gate = _load("check_compiler")


def test_a_recorded_pass_that_fails_now_is_a_regression() -> None:
    d = gate.compare({"a": True, "b": True, "c": False}, {"a": True, "b": False, "c": False})
    assert d.regressions == ["b"] and d.fixes == [] and d.new == [] and d.missing == []
    assert d.lines("embedded") == ["  embedded: REGRESSION b (passed in the record, fails now)"]


def test_fixes_new_and_missing_samples_are_listed_but_are_not_regressions() -> None:
    d = gate.compare({"a": False, "gone": True}, {"a": True, "fresh": False})
    assert d.regressions == []
    assert d.fixes == ["a"] and d.new == ["fresh"] and d.missing == ["gone"]


def test_the_same_results_make_no_difference() -> None:
    results = {"x": True, "y": False}
    d = gate.compare(results, dict(results))
    assert d.lines("bmv2") == []


def test_a_record_keeps_the_targets_this_run_did_not_run() -> None:
    previous = {"p4c_commit": "abc", "targets": {"bmv2": {"a": True}, "embedded": {"a": False}}}
    doc = gate.record_document({"embedded": {"b": True, "a": True}}, previous, "", "")
    assert doc["p4c_commit"] == "abc"
    assert doc["targets"] == {"bmv2": {"a": True}, "embedded": {"a": True, "b": True}}


def test_the_summary_names_the_failing_samples() -> None:
    assert gate.summary("embedded", {"a": True, "b": False}) == "embedded: 1 of 2 pass (failing: b)"


def test_the_recorded_list_meets_the_bars() -> None:
    record = json.loads(gate.RECORD.read_text())
    for target in ("embedded", "bmv2"):
        results = record["targets"][target]
        assert len(results) == 191 and sum(results.values()) >= 190


def test_without_a_p4c_checkout_it_says_so_and_exits_2(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "check_compiler.py"), "--p4c", str(tmp_path)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip().startswith("check-compiler: no p4c checkout")
    assert "Traceback" not in done.stderr
