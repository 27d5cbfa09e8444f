"""Each simulated run in a forked child (`sim.isolate`): a value or a SimError comes back as if
called here; ns-3 ending the process (an NS_ASSERT calls abort) fails that run only."""
from __future__ import annotations

import json
import os
from dataclasses import replace

import pytest

from experiments import config as configs
from experiments.records import ResultsDir
from experiments.backends.ns3 import harness
from sim import isolate
from sim.errors import SimError


def _refuse() -> None:
    raise SimError("no such thing")


def test_a_value_and_a_sim_error_come_back():
    assert isolate.call(sum, [40, 2]) == 42
    with pytest.raises(SimError, match="no such thing"):
        isolate.call(_refuse)


def test_a_child_that_aborts_is_a_crash_not_the_end():
    crash = isolate.call(os.abort)
    assert isinstance(crash, isolate.Crash)
    assert crash.message().startswith("ns-3 ended the simulation (")
    assert isolate.call(sum, [1, 2]) == 3


def test_an_aborted_run_fails_and_the_experiment_goes_on(tmp_path, monkeypatch):
    cfg = harness.setup(configs.load(configs.default_path("ltp_incast"), quick=True))
    cfg = replace(cfg, rounds=2, topology=replace(cfg.topology, workers=2))
    doomed = cfg.arms[0].name
    real = harness.run_arm

    def run_arm(cfg, arm, rep, out_dir, options):
        if arm.name == doomed:
            os.abort()            # what ns-3 does on an NS_ASSERT
        return real(cfg, arm, rep, out_dir, options)

    monkeypatch.setattr(harness, "run_arm", run_arm)
    rd = ResultsDir.create(tmp_path, cfg.name)
    harness.run(cfg, rd, out=lambda _: None)
    runs = {r["arm"]: r for r in map(json.loads, rd.runs_path.read_text().splitlines())}
    assert set(runs) == {a.name for a in cfg.arms}
    assert not runs[doomed]["ok"] and runs[doomed]["error"].startswith("ns-3 ended the simulation")
    assert all(r["ok"] for name, r in runs.items() if name != doomed)
