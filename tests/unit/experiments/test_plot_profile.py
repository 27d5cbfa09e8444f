"""The PLOT profiler: bound choice, the policy file it writes (checked by the real policy
loader and gradctl), and the in-process lossy training it measures with."""
from __future__ import annotations

import json

import numpy as np
import pytest

from controller import gradctl
from controller.policy import load_policy
from experiments import plot_profile as pp
from experiments.lossy_training import TrainSettings, train

RATES = (0.01, 0.02, 0.05, 0.10, 0.20)
TINY = TrainSettings(hidden=(16, 8), rounds=6, chunk_elems=64)


def test_choose_bound_keeps_the_largest_rate_whose_prefix_is_within_tolerance():
    assert pp.choose_bound({0.01: 0.0, 0.02: 0.001, 0.05: 0.004, 0.1: 0.006, 0.2: 0.01}, 0.005) == 0.05
    assert pp.choose_bound({0.01: -0.01, 0.02: 0.0, 0.05: 0.0, 0.1: 0.0, 0.2: 0.005}, 0.005) == 0.2
    # a failing rate stops the search: a lucky higher rate does not win
    assert pp.choose_bound({0.01: 0.0, 0.02: 0.02, 0.05: 0.0, 0.1: 0.0, 0.2: 0.0}, 0.005) == 0.01
    assert pp.choose_bound({0.01: 0.006, 0.2: 0.0}, 0.005) == 0.0      # must deliver


def test_bounds_are_monotone_in_the_measured_accuracy_drop():
    rng = np.random.default_rng(7)
    for _ in range(500):
        drops = dict(zip(RATES, rng.normal(0.004, 0.004, len(RATES))))
        worse = {r: d + abs(rng.normal(0, 0.003)) for r, d in drops.items()}
        assert pp.choose_bound(worse, 0.005) <= pp.choose_bound(drops, 0.005)
        # a looser tolerance never gives a tighter bound
        assert pp.choose_bound(drops, 0.01) >= pp.choose_bound(drops, 0.005)
    # a drop that grows with the rate: the bound falls as the layer gets more sensitive
    bounds = [pp.choose_bound({r: k * r for r in RATES}, 0.005) for k in (0.01, 0.05, 0.2, 1.0)]
    assert bounds == sorted(bounds, reverse=True) and bounds[0] == 0.2 and bounds[-1] == 0.0


def test_written_policy_loads_as_a_policy_and_gradctl_accepts_it(tmp_path, capsys):
    bounds = [0.2, 0.1, 0.05, 0.0]
    doc = pp.policy_document(bounds, jobs=[1, 2, 3])
    path = tmp_path / "plot.yaml"
    pp.write_policy(path, doc, ["a header line"])
    policy = load_policy(path)
    assert [j.job_id for j in policy.jobs] == [1, 2, 3]
    for job in policy.jobs:
        assert [r.layers for r in job.rules] == [(0, 0), (1, 1), (2, 2), (3, 3)]
        assert [r.loss_bound for r in job.rules] == bounds
        assert [r.pull_bound for r in job.rules] == [b / 4 for b in bounds]   # hosts' default pull
        assert [r.drop_eligible for r in job.rules] == [True, True, True, False]
        assert [r.priority for r in job.rules] == [6, 5, 4, 3]
        assert all(r.mag_classes == (0, 7) for r in job.rules)
    assert gradctl.main(["policy", "apply", str(path), "--check"]) == 0
    assert "valid" in capsys.readouterr().out


@pytest.mark.slow
def test_profiler_command_writes_a_policy_and_its_measurements(tmp_path, capsys):
    out = tmp_path / "policy.yaml"
    rc = pp.main(["--out", str(out), "--hidden", "16,8", "--rounds", "6", "--chunk-elems", "64",
                  "--seeds", "1,2", "--rates", "0.05,0.2", "--jobs", "1-2"])
    assert rc == 0
    policy = load_policy(out)
    measured = json.loads((tmp_path / "policy.yaml.profile.json").read_text())
    assert len(measured["bounds"]) == 3 and len(policy.jobs) == 2
    assert [r.loss_bound for r in policy.jobs[0].rules] == measured["bounds"]
    for layer, row in measured["drops"].items():
        expect = pp.choose_bound({float(r): d for r, d in row.items()}, measured["tolerance"])
        assert measured["bounds"][int(layer)] == expect
        for rate, accs in measured["accuracy"][layer].items():
            drop = np.mean([b - a for b, a in zip(measured["base_accuracy"], accs)])
            assert row[rate] == pytest.approx(drop)
    assert "bounds per layer" in capsys.readouterr().out


@pytest.mark.parametrize("argv, words", [
    (["--rates", "0.05,1.5"], "--rates"),
    (["--jobs", "x"], "--jobs"),
    (["--hidden", "0"], "--hidden"),
    (["--seeds", ""], "--seeds"),
])
def test_bad_input_is_one_line_and_writes_nothing(tmp_path, capsys, argv, words):
    out = tmp_path / "p.yaml"
    assert pp.main(["--out", str(out), "--rounds", "2", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert words in err and "\n" not in err and not out.exists()


def test_injected_loss_stays_within_the_bound_and_in_its_layer():
    settings = TrainSettings(hidden=(64, 32), rounds=8, chunk_elems=64)
    out = train(settings, 1, {0: 0.2})
    assert 0.05 < out.push_lost_fraction[0] <= 0.2       # loss reached training, bounded
    assert out.push_lost_fraction[1:] == [0.0, 0.0]
    assert 0.0 < out.pull_lost_fraction[0] <= 0.05       # pull: a quarter of the bound
    # a bound below one chunk's share: the transport repairs everything
    out = train(settings, 1, {2: 0.2})                  # layer 2: 330 elements, 6 chunks
    assert out.push_lost_fraction[2] <= 0.2
    tight = train(settings, 1, {0: 0.2}, bounds={0: 0.001})
    assert tight.push_lost_fraction[0] == 0.0


def test_loss_free_in_process_training_is_deterministic_and_learns():
    a = train(TINY, 3)
    assert a.accuracy == train(TINY, 3).accuracy
    longer = train(TrainSettings(hidden=(32,), rounds=40, lr=0.05, batch=64), 1)
    assert longer.accuracy > 0.8


def test_profiler_takes_the_experiment_config_and_explicit_flags_win(tmp_path):
    out = tmp_path / "policy.yaml"
    rc = pp.main(["--out", str(out), "--config", "experiments/configs/plot_bounds.yaml",
                  "--hidden", "16", "--rounds", "3", "--seeds", "1", "--rates", "0.2"])
    assert rc == 0
    measured = json.loads((tmp_path / "policy.yaml.profile.json").read_text())
    s = measured["settings"]
    assert (s["lr"], s["batch"], s["chunk_elems"], s["momentum"]) == (0.05, 64, 360, 0.9)  # config
    assert (s["hidden"], s["rounds"]) == ([16], 3)                                           # flags
    assert measured["rates"] == [0.2] and measured["tolerance"] == 0.005
    assert pp.main(["--out", str(out), "--config", str(tmp_path / "none.yaml")]) == 2


@pytest.mark.slow
def test_tensor_scope_pools_the_budget_so_any_layer_may_hold_the_holes():
    settings = TrainSettings(hidden=(64, 32), rounds=8, chunk_elems=64)
    sizes = [64 * 64 + 64, 64 * 32 + 32, 32 * 10 + 10]
    everywhere = {layer: 0.3 for layer in range(3)}
    # per layer: the tight layer 1 stays within its bound whatever the others may lose
    per_layer = train(settings, 1, everywhere, {0: 0.3, 1: 0.02, 2: 0.3})
    assert per_layer.push_lost_fraction[1] <= 0.02 + 1e-9
    # tensor: the same budget pooled; the pooled loss stays within it, spread over the layers,
    # so the layer a per-layer bound protected now loses about the pooled fraction
    budget = 0.3 * sizes[0] + 0.02 * sizes[1] + 0.3 * sizes[2]
    b = pp.tensor_bound([0.3, 0.02, 0.3], sizes)
    pooled = train(settings, 1, everywhere, {layer: b for layer in range(3)}, scope="tensor")
    lost = np.dot(pooled.push_lost_fraction, sizes)
    assert lost <= budget + 1e-6 and lost > 0.5 * b * sum(sizes)
    assert pooled.push_lost_fraction[1] > 0.02 + 1e-9
    # without injected loss both scopes train the same
    assert train(settings, 2, scope="tensor").accuracy == train(settings, 2).accuracy


def test_tensor_bound_is_the_per_layer_budget_over_the_tensor_never_looser():
    assert pp.tensor_bound([0.5, 0.1, 0.5], [160, 8224, 330]) == pytest.approx(1067.4 / 8714, abs=1e-6)
    assert pp.tensor_bound([0.5, 0.1, 0.5], [160, 8224, 330]) * 8714 <= 1067.4
    assert pp.tensor_bound([0.2, 0.2], [10, 7]) == 0.2
    assert pp.tensor_bound([0.0, 0.0], [5, 5]) == 0.0
    with pytest.raises(pp.ProfileError, match="2 bounds for 3 layers"):
        pp.tensor_bound([0.1, 0.2], [1, 2, 3])


@pytest.mark.slow
def test_profiler_measures_every_layer_of_the_cnn(tmp_path):
    out = tmp_path / "cnn.yaml"
    rc = pp.main(["--out", str(out), "--model", "cnn", "--filters", "4", "--hidden", "8",
                  "--rounds", "4", "--seeds", "1", "--rates", "0.5", "--chunk-elems", "16"])
    assert rc == 0
    measured = json.loads((tmp_path / "cnn.yaml.profile.json").read_text())
    assert measured["settings"]["model"] == "cnn" and measured["settings"]["filters"] == 4
    assert measured["settings"]["hole_fill"] == "zero"           # PLOT's filling by default
    assert len(measured["bounds"]) == 3 == len(load_policy(out).jobs[0].rules)
    # every layer spans several 16-value chunks (40, 1032, 90 values), so loss reaches each
    assert all(0.0 < measured["lost_fraction"][str(layer)]["0.5"] <= 0.5 for layer in range(3))
    assert pp.main(["--out", str(out), "--model", "cnn", "--hidden", "8,8"]) == 2
