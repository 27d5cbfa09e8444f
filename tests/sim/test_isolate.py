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


@pytest.mark.slow
def test_a_child_that_aborts_is_a_crash_not_the_end():
    crash = isolate.call(os.abort)
    assert isinstance(crash, isolate.Crash)
    assert crash.message().startswith("ns-3 ended the simulation (")
    assert isolate.call(sum, [1, 2]) == 3


@pytest.mark.slow
def _pid() -> int:
    return os.getpid()


@pytest.mark.slow
def test_a_runner_keeps_one_child_and_replaces_it_after_a_crash_or_an_error():
    with isolate.Runner() as runner:
        first = runner.call(_pid)
        assert first != os.getpid() and runner.call(_pid) == first       # the same child, kept
        assert runner.call(sum, [40, 2]) == 42
        assert isinstance(runner.call(os.abort), isolate.Crash)
        second = runner.call(_pid)
        assert second not in (first, os.getpid())                         # a fresh one after the crash
        with pytest.raises(SimError, match="no such thing"):
            runner.call(_refuse)
        assert runner.call(_pid) not in (second, os.getpid())            # ... and after an error
        assert runner.call(lambda: 7) == 7          # a closure cannot be sent: a child of its own
        child = runner._pid
    with pytest.raises(ChildProcessError):
        os.waitpid(child, os.WNOHANG)               # the runner waited for its child


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
