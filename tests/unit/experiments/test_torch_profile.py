"""The PyTorch per-layer profile: a layer's tolerance, loss that lands only in the profiled
layer, and one-line errors on bad flags."""
from __future__ import annotations

import pytest

from experiments import torch_profile
from hosts.training.models import ModelSpec

pytest.importorskip("torch")


def test_a_layers_tolerance_is_the_largest_rate_with_every_smaller_rate_within_bounds():
    assert torch_profile.tolerance_of({0.1: 0.0, 0.3: 0.004, 0.5: 0.02, 0.8: 0.001}, 0.005) == 0.3
    assert torch_profile.tolerance_of({0.1: 0.01, 0.3: 0.0}, 0.005) == 0.0
    assert torch_profile.tolerance_of({0.1: -0.01, 0.8: 0.0}, 0.005) == 0.8


@pytest.mark.slow
def test_loss_in_one_layer_changes_the_run_and_no_loss_repeats_it():
    spec = ModelSpec("torch-mlp", hidden=(16,))
    kw = dict(workers=2, batch=16, rounds=15, lr=0.1, momentum=0.9, chunk_elems=64)
    base = torch_profile.train(spec, 1, **kw)
    assert torch_profile.train(spec, 1, **kw) == base
    assert torch_profile.train(spec, 1, layer=0, rate=0.8, **kw) != base


@pytest.mark.parametrize("argv,message", [
    (["--rates", "0.1,1.5"], "--rates must lie in (0, 1)"),
    (["--seeds", "a"], "--seeds 'a' is not a comma-separated list"),
    (["--rounds", "0"], "must be positive"),
    (["--model", "torch-mlp", "--layers", "conv*"], "--layers 'conv*' matches no parameter"),
])
def test_bad_flags_get_one_line_and_status_2(tmp_path, capsys, argv, message):
    assert torch_profile.main(["--out", str(tmp_path), *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
