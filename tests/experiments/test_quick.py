"""Every registered experiment runs end to end in --quick mode (a network test: root, Mininet,
under /tmp/gradlane-net.lock on a shared machine). Checks the files, never the figures."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import matplotlib.image
import pytest

import experiments
from experiments import config as configs
from experiments.records import ROUND_FIELDS, RUN_FIELDS
from support.topology_helpers import REPO

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
# Experiments whose --quick takes longer than this suite can afford (regimes: 16 jobs on 4
# networks, ~5 minutes); their pieces have unit tests (tests/unit/experiments) and
# tests/experiments/test_route_rto.py, and `make experiment NAME=... ARGS=--quick` runs them.
TOO_SLOW_FOR_CI = {"regimes"}


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.timeout(420)
@pytest.mark.parametrize("name", [n for n in experiments.names() if n not in TOO_SLOW_FOR_CI])
def test_quick_run_writes_records_summary_and_plots(name, experiment_build, tmp_path):
    module = experiments.get(name)
    out = tmp_path / "results"
    logs = tmp_path / "logs"
    argv = [sys.executable, "-m", "experiments", name, "--quick", "--out", str(out),
            "--build", experiment_build, "--log-dir", str(logs)]
    proc = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        stdout, stderr = proc.communicate(timeout=400)
    except subprocess.TimeoutExpired:
        proc.terminate()        # the runner stops its network on SIGTERM
        stdout, stderr = proc.communicate(timeout=60)
        pytest.fail(f"{name} --quick did not finish in 400 s:\n{stdout[-3000:]}")
    assert proc.returncode == 0, f"{' '.join(argv)} exited {proc.returncode}:\n{stdout[-3000:]}\n{stderr[-3000:]}"
    assert "rep 1/" in stdout and "ETA" in stdout, "no progress lines"

    [run_dir] = list((out / name).iterdir())
    cfg = configs.load_saved(run_dir / "config.yaml")
    assert cfg.is_quick and cfg.name == name

    runs = _jsonl(run_dir / "runs.jsonl")
    for run in runs:
        assert set(RUN_FIELDS) <= set(run), f"run record lacks {set(RUN_FIELDS) - set(run)}"
        assert isinstance(run["conditions"].get("load1_end"), float)
        assert "switch_dropped" in run["conditions"]
    expected = {(a.name, rep) for a in cfg.arms for rep in range(cfg.repetitions_of(a))}
    assert {(r["arm"], r["rep"]) for r in runs} == expected
    assert any(r["ok"] for r in runs), [r["error"] for r in runs]

    rounds = _jsonl(run_dir / "rounds.jsonl")
    assert rounds, "no round records"
    for rec in rounds:
        assert set(ROUND_FIELDS) <= set(rec), f"round record lacks {set(ROUND_FIELDS) - set(rec)}"
    for run in runs:
        if run["ok"]:
            mine = [r for r in rounds if r["arm"] == run["arm"] and r["rep"] == run["rep"]]
            assert mine and all(r["round_time_s"] > 0 for r in mine), run["arm"]

    summary = (run_dir / "summary.md").read_text()
    for figure in module.FIGURES:
        assert f"| {figure.label} |" in summary, f"summary.md has no row for {figure.key}"
    assert "## Run conditions" in summary

    pngs = sorted(run_dir.glob("*.png"))
    assert pngs, "no plots written"
    for png in pngs:
        assert png.read_bytes()[:8] == PNG_MAGIC, png.name
        image = matplotlib.image.imread(png)
        assert image.shape[0] > 100 and image.shape[1] > 100, png.name
        assert f"]({png.name})" in summary, f"summary.md does not show {png.name}"
