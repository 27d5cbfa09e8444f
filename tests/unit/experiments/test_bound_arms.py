"""PLOT's bound arms in process: per-layer, uniform and whole-tensor bounds with one budget."""
from __future__ import annotations

import json

import numpy as np
import pytest

from experiments import bound_arms as ba
from experiments import plot_profile as pp
from experiments.lossy_training import TrainSettings


def test_arms_get_their_bounds_and_scope():
    sizes = [160, 8224, 330]
    assert ba.arm_bounds("per_layer", [0.5, 0.1, 0.5], sizes) == ([0.5, 0.1, 0.5], "layer")
    assert ba.arm_bounds("uniform", [0.5, 0.1, 0.5], sizes) == ([0.1, 0.1, 0.1], "layer")
    bound = pp.tensor_bound([0.5, 0.1, 0.5], sizes)
    assert ba.arm_bounds("tensor", [0.5, 0.1, 0.5], sizes) == ([bound] * 3, "tensor")
    with pytest.raises(pp.ProfileError, match="unknown arm"):
        ba.arm_bounds("tcp", [0.1], [5])


@pytest.mark.slow
def test_compare_keeps_each_arm_within_its_bounds():
    settings = TrainSettings(hidden=(32,), rounds=5, chunk_elems=64, hole_fill="zero")
    record = ba.compare(settings, [0.4, 0.05], rates=[0.5], seeds=[1, 2])
    sizes = record["layer_sizes"]
    assert sizes == [64 * 32 + 32, 330] and len(record["base_accuracy"]) == 2
    arms = {o["arm"]: o for o in record["arms"]}
    assert set(arms) == set(ba.ARMS)
    assert all(lost <= b + 1e-9 for lost, b in zip(arms["per_layer"]["lost_by_layer"], [0.4, 0.05]))
    assert all(lost <= 0.05 + 1e-9 for lost in arms["uniform"]["lost_by_layer"])
    tensor = arms["tensor"]
    assert tensor["scope"] == "tensor" and tensor["lost_tensor"] <= tensor["bounds"][0] + 1e-9
    for o in record["arms"]:
        assert o["drop_points"] == pytest.approx([100 * (b - a) for b, a in
                                                  zip(record["base_accuracy"], o["accuracy"])])
        assert o["lost_tensor"] == pytest.approx(np.dot(o["lost_by_layer"], sizes) / sum(sizes))
    assert "| 50% | tensor | tensor |" in ba.markdown(record)


def test_command_takes_a_config_and_explicit_bounds(tmp_path, capsys):
    out = tmp_path / "arms.json"
    cfg = tmp_path / "c.yaml"
    cfg.write_text("name: plot_bounds\nrounds: 3\nchunk_elems: 64\n"
                   "model: {kind: cnn, filters: 4, hidden: '8', batch: 32}\n"
                   "arms: [{name: per_layer, params: {bounds: per_layer}}]\n")
    assert ba.main(["--config", str(cfg), "--bounds", "0.5,0.1,0.5", "--rates", "0.3",
                    "--seeds", "1", "--out", str(out)]) == 0
    record = json.loads(out.read_text())
    assert record["settings"]["model"] == "cnn" and record["settings"]["hole_fill"] == "mean-delivered"
    assert "| 30% | per_layer |" in capsys.readouterr().out
    assert ba.main(["--config", str(cfg), "--bounds", "0.5,0.1", "--seeds", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert "2 bounds for a model of 3 layers" in err and "\n" not in err
