"""Every simulated experiment's --quick runs end to end with --backend ns3 (no Mininet): records
in the emulation's format marked as simulated, a summary that says so, plots. The command line
runs in this process (`experiments.cli.main`, as tests/sim/test_ns3_configs.py does), so ns-3 and
gradlane's C++ are loaded and compiled once for all of them, not once per experiment;
`python -m experiments` itself runs as a process in tests/experiments/test_quick.py."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from experiments import cli
from experiments.records import ROUND_FIELDS, RUN_FIELDS
from experiments.backends.ns3.harness import simulated_names, simulation

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(300)
# an experiment whose one simulated config is experiments/configs/ns3/'s runs in test_ns3_configs.py
@pytest.mark.parametrize("name", sorted(n for n in simulated_names() if simulation(n).config is None))
@pytest.mark.slow
def test_quick_on_ns3(name, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(REPO)             # the configs name files relative to the repository
    code = cli.main([name, "--quick", "--backend", "ns3", "--out", str(tmp_path)])
    out = capsys.readouterr()
    assert code == 0, out.out[-2000:] + out.err[-2000:]
    (run_dir,) = (tmp_path / name).iterdir()
    runs = [json.loads(line) for line in (run_dir / "runs.jsonl").read_text().splitlines()]
    assert runs and all(r["ok"] and r["backend"] == "ns3" for r in runs)
    assert all(set(RUN_FIELDS) <= set(r) for r in runs)
    rounds = [json.loads(line) for line in (run_dir / "rounds.jsonl").read_text().splitlines()]
    assert rounds and all(set(ROUND_FIELDS) <= set(r) for r in rounds)
    assert "SIMULATED with ns-3" in (run_dir / "summary.md").read_text()
    assert list(run_dir.glob("*.png"))
