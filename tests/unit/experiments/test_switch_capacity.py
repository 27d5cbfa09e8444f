"""Experiments know their switch: its build and loss-free rate (cached), and a refusal of a
config whose bottleneck would make the switch's CPU the thing measured."""
import json
import sys

import pytest

from experiments import switch_capacity as sc
from experiments.config import TopologySettings
from experiments.errors import ExperimentError


def _prof(pps):
    return sc.SwitchProfile("bmv2-default", "real: simple_switch_grpc", pps, "test")


def test_verdict_thresholds():
    assert sc.verdict(_prof(3500.0), 1000.0)[0] == "ok"
    kind, why = sc.verdict(_prof(3500.0), 2000.0)
    assert kind == "flag" and "57%" in why
    kind, why = sc.verdict(_prof(3500.0), 3000.0)
    assert kind == "refuse" and "switch's CPU, not the queue" in why
    assert sc.verdict(_prof(3500.0), None)[0] == "flag"
    assert sc.verdict(_prof(None), 10.0)[0] == "flag"


@pytest.fixture
def cached_embedded(tmp_path, monkeypatch):
    """The embedded switch as $SWITCH, a build folder, and a cache that knows its rate."""
    monkeypatch.setenv("SWITCH", f"{sys.executable} -m p4target switch")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    build = tmp_path / "build"
    build.mkdir()
    (build / "gradlane.json").write_text('{"program": "x"}')
    key = sc._program_key("embedded", build / "gradlane.json")
    sc.cache_path().parent.mkdir(parents=True)
    sc.cache_path().write_text(json.dumps({key: {"loss_free_pps": 2500, "measured": "2026-11-26 05:00"}}))
    return build


def test_profile_is_looked_up_in_the_cache(cached_embedded, monkeypatch):
    monkeypatch.setattr(sc, "measure", lambda *a: pytest.fail("measured although cached"))
    prof = sc.profile(str(cached_embedded))
    assert (prof.build, prof.loss_free_pps) == ("embedded", 2500.0)
    assert "embedded switch" in prof.describe() and "2.5 kpps" in prof.describe()


def test_check_plan_refuses_and_records_the_switch(cached_embedded, tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    lines = []
    with pytest.raises(ExperimentError, match="refused: bottleneck 3000 pps is 120%"):
        sc.check_plan([TopologySettings(bottleneck_pps=3000.0)], str(cached_embedded), results, lines.append)
    sc.check_plan([TopologySettings(bottleneck_pps=1500.0), TopologySettings(bottleneck_pps=500.0)],
                  str(cached_embedded), results, lines.append)
    assert any(line.startswith("WARNING: SWITCH CPU MAY BE THE BOTTLENECK: bottleneck 1500 pps") for line in lines)
    summary = sc.summary_lines(results)
    assert "the embedded switch" in summary[0] and "2.5 kpps" in summary[0]
    assert summary[1].startswith("**Flagged: bottleneck 1500 pps") and summary[-1] == ""
    assert sc.summary_lines(tmp_path) == []


def test_a_failed_measurement_is_flagged_not_refused(cached_embedded, monkeypatch):
    sc.cache_path().unlink()

    def fails(*args):
        raise ExperimentError("could not measure the switch's loss-free rate: no root")

    monkeypatch.setattr(sc, "measure", fails)
    prof = sc.profile(str(cached_embedded), out=lambda line: None)
    assert prof.loss_free_pps is None and "no root" in prof.source
    assert sc.verdict(prof, 3000.0)[0] == "flag" and not sc.cache_path().exists()
