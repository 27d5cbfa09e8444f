"""The DDP hook on loopback, real processes: two ranks and a parameter server train as gloo's
all-reduce does (same steps, accuracy within half a point), and bad input ends the job with a
clear error instead of a hang: a rank whose model differs, a bucket the hook was not made for,
a rank that leaves."""
from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from hosts.exchange.job_key import create_key_file
from support.ports import free_port

pytest.importorskip("torch")
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[4]

SCRIPT = Path(__file__).with_name("rank_script.py")
EXAMPLE = ROOT / "examples" / "ddp_digits.py"
WAIT = 600   # seconds a whole job may take on a loaded two-core machine (imports included)


def _launch(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hosts.ddp.launch", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=WAIT)


def _result(run: subprocess.CompletedProcess) -> dict:
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_two_ranks_over_gradlane_match_gloo_allreduce():
    flags = ["--", str(EXAMPLE), "--model", "torch-mlp", "--steps", "40", "--seed", "3"]
    over_gloo = _result(_launch("--ranks", "2", "--backend", "gloo", *flags))
    over_gradlane = _result(_launch("--ranks", "2", *flags))
    assert over_gloo["steps"] == over_gradlane["steps"] == 40
    assert over_gradlane["gradlane"]["rounds"] == 40      # one transport round per step
    assert abs(over_gradlane["accuracy"] - over_gloo["accuracy"]) <= 0.005
    assert over_gloo["accuracy"] > 0.8


def test_a_rank_whose_model_differs_is_refused_and_the_job_ends():
    run = _launch("--ranks", "2", "--", str(SCRIPT), "layout")
    assert run.returncode != 0
    error = run.stderr
    assert re.search(r"hosts.ddp.server: error: rank [01]'s model differs from rank [01]'s: "
                     r"parameter 0 is 'layers.0.weight' of (1024|2048) elements where the job "
                     r"has 'layers.0.weight' of (2048|1024)", error), error


def test_a_bucket_the_hook_was_not_made_for_fails_the_backward_pass():
    run = _launch("--ranks", "1", "--", str(SCRIPT), "foreign")
    assert run.returncode != 0
    assert "a bucket holds a parameter of 1024 elements that is not in the layout" in run.stderr


def test_a_rank_that_leaves_ends_the_job_for_the_others(tmp_path):
    key = str(tmp_path / "job.key")
    create_key_file(key)
    control = free_port()
    flags = ["--job-key", key]
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()), WORLD_SIZE="2",
               GRADLANE_PS=f"127.0.0.1:{control}", GRADLANE_FLAGS=shlex.join(flags))
    server = subprocess.Popen([sys.executable, "-m", "hosts.ddp.server", "--ranks", "2",
                               "--port", str(free_port()), "--control-port", str(control),
                               "--log", str(tmp_path / "server.jsonl"), *flags],
                              cwd=ROOT, stderr=subprocess.PIPE, text=True)
    ranks = [subprocess.Popen([sys.executable, str(SCRIPT), "leave"], cwd=ROOT, text=True,
                              env=dict(env, RANK=str(r)), stderr=subprocess.PIPE)
             for r in range(2)]
    try:
        _, server_err = server.communicate(timeout=WAIT)
        _, rank0_err = ranks[0].communicate(timeout=WAIT)
        assert ranks[1].wait(timeout=WAIT) == 3
        assert server.returncode == 2
        assert server_err.strip().splitlines()[-1].startswith(
            "hosts.ddp.server: error: rank 1 left the job in round")
        assert ranks[0].returncode != 0
        assert "gradlane: rank 1 left the job in round" in rank0_err
    finally:
        for p in [server, *ranks]:
            if p.poll() is None:
                p.kill()
                p.wait()
