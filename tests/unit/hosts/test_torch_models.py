"""The PyTorch models: transport layers are the parameters (names and sizes), flat tensors round
trip, gradients are autograd's, a seed fixes the initialisation, and each model learns its task."""
from __future__ import annotations

import argparse

import numpy as np
import pytest
import torch

from hosts.errors import ConfigError
from hosts.training import sequences
from hosts.training.mlp import MomentumSGD
from hosts.training.model_args import add_model_arguments, model_spec
from hosts.training.models import ModelSpec


def _built(kind: str, seed: int = 1, **kw):
    spec = ModelSpec(kind, **kw)
    data = spec.load_data(seed)
    return spec, data, spec.build(data.num_features, data.num_classes, seed)


def test_layers_are_the_parameters_in_order_with_their_names():
    spec, _, model = _built("torch-cnn", hidden=(32,), filters=8)
    assert spec.layer_names() == model.layer_names() == [
        "conv.weight", "conv.bias", "dense.weight", "dense.bias", "out.weight", "out.bias"]
    assert model.layer_sizes() == [72, 8, 128 * 32, 32, 320, 10]
    assert spec.num_layers == model.num_layers == 6
    assert spec.describe()["layer_names"] == model.layer_names()


def test_resnet_and_transformer_name_normalisation_attention_and_feed_forward_layers():
    names = ModelSpec("resnet").layer_names()
    assert names[0] == "stem.weight" and names[-2:] == ["classifier.weight", "classifier.bias"]
    assert "stage2.norm1.weight" in names and "stage2.conv2.weight" in names
    names = ModelSpec("transformer").layer_names()
    assert "blocks.0.attn.in_proj_weight" in names and "blocks.1.ff_in.weight" in names
    assert names[-2:] == ["head.weight", "head.bias"]


def test_flat_tensors_round_trip_and_gradients_are_autograds():
    _, data, model = _built("torch-mlp", hidden=(16,))
    flat = model.get_flat()
    assert [f.size for f in flat] == model.layer_sizes() and all(f.dtype == np.float32 for f in flat)
    changed = [f * 0.5 + 0.01 for f in flat]
    model.set_flat(changed)
    assert all(np.array_equal(a, b) for a, b in zip(model.get_flat(), changed))
    x, y = data.x_train[:20], data.y_train[:20]
    loss, grads = model.loss_and_gradients(x, y)
    module = model.module
    module.zero_grad()
    reference = torch.nn.functional.cross_entropy(module(torch.from_numpy(x)), torch.from_numpy(y))
    reference.backward()
    assert loss == pytest.approx(reference.item())
    for g, p in zip(grads, module.parameters()):
        assert np.allclose(g, p.grad.numpy().ravel())


def test_a_seed_fixes_the_initialisation_and_leaves_torch_rng_alone():
    torch.manual_seed(123)
    expected = torch.rand(1)
    torch.manual_seed(123)
    a = _built("resnet", seed=3)[2].get_flat()
    after = torch.rand(1)
    b = _built("resnet", seed=3)[2].get_flat()
    c = _built("resnet", seed=4)[2].get_flat()
    assert torch.equal(expected, after)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert not all(np.array_equal(x, y) for x, y in zip(a, c))


def test_the_sequence_task_is_seeded_and_labels_the_most_frequent_token():
    a, b = sequences.generate(5, 200), sequences.generate(5, 200)
    assert np.array_equal(a.x_train, b.x_train) and a.x_train.dtype == np.int64
    x = np.concatenate([a.x_train, a.x_test])
    y = np.concatenate([a.y_train, a.y_test])
    counts = np.stack([(x == c).sum(axis=1) for c in range(sequences.CLASSES)], axis=1)
    assert np.array_equal(counts.argmax(axis=1), y)
    assert x.shape[1] == sequences.LENGTH and counts.max(axis=1).min() >= sequences.PLANTED


@pytest.mark.parametrize("kind,rounds", [("torch-mlp", 60), ("torch-cnn", 60)])
def test_each_model_learns_the_digits_with_the_ps_optimiser(kind, rounds):
    _, data, model = _built(kind, hidden=(32,), filters=8)
    _, before = model.evaluate(data.x_test, data.y_test)
    opt = MomentumSGD(0.1, 0.9)
    rng = np.random.default_rng(0)
    for _ in range(rounds):
        idx = rng.integers(0, len(data.y_train), 32)
        _, grads = model.loss_and_gradients(data.x_train[idx], data.y_train[idx])
        model.set_flat(opt.step(model.get_flat(), grads))
    _, after = model.evaluate(data.x_test, data.y_test)
    assert before < 0.3 and after > 0.85


def test_the_model_flags_select_torch_models_and_reject_bad_input():
    ap = argparse.ArgumentParser()
    add_model_arguments(ap)
    spec = model_spec(ap.parse_args(["--model", "resnet", "--filters", "8"]))
    assert spec.torch and spec.describe()["filters"] == 8
    with pytest.raises(ConfigError, match="--filters 0"):
        ModelSpec("resnet", filters=0)
    with pytest.raises(ConfigError, match="8x8 images"):
        ModelSpec("resnet").build(12, 10, 1)
    with pytest.raises(ConfigError, match="sequences of 12 tokens"):
        ModelSpec("transformer").build(64, 10, 1)
    with pytest.raises(ConfigError, match="not a PyTorch model"):
        ModelSpec("mlp").module(64, 10, 1)
