"""The bundled models: the small CNN's layers and gradients, determinism by seed, training on
the digits, and the model registry the agents' --model flag selects from."""
from __future__ import annotations

import argparse

import numpy as np
import pytest

from hosts.errors import ConfigError
from hosts.training import dataset
from hosts.training.cnn import SmallCNN
from hosts.training.mlp import MLP, MomentumSGD
from hosts.training.model_args import add_model_arguments, model_spec
from hosts.training.models import ModelSpec


def test_cnn_layers_have_the_documented_shapes_and_flat_layout():
    model = SmallCNN(filters=16, hidden=32, classes=10, seed=1)
    assert model.num_layers == 3
    assert model.layer_sizes() == [9 * 16 + 16, 4 * 4 * 16 * 32 + 32, 32 * 10 + 10] == [160, 8224, 330]
    assert [w.shape for w in model.weights] == [(9, 16), (256, 32), (32, 10)]
    flat = model.get_flat()
    assert [f.size for f in flat] == model.layer_sizes() and all(f.dtype == np.float32 for f in flat)
    assert np.array_equal(flat[0][:144], model.weights[0].ravel())      # kernels first, then biases
    changed = [f + 1.0 for f in flat]
    model.set_flat(changed)
    assert all(np.array_equal(a, b) for a, b in zip(model.get_flat(), changed))
    assert np.array_equal(model.biases[2], changed[2][320:])


def _float64(model: SmallCNN) -> SmallCNN:
    model.weights = [w.astype(np.float64) for w in model.weights]
    model.biases = [b.astype(np.float64) + 0.01 for b in model.biases]
    return model


def test_cnn_gradients_match_finite_differences_in_every_layer():
    rng = np.random.default_rng(0)
    model = _float64(SmallCNN(filters=4, hidden=8, classes=10, seed=3))
    x, y = rng.random((6, 64)), rng.integers(0, 10, 6)
    _, grads = model.loss_and_gradients(x, y)
    for layer in range(3):
        w = model.weights[layer]
        for idx in rng.choice(w.size, 5, replace=False):
            pos = np.unravel_index(idx, w.shape)
            old = w[pos]
            w[pos] = old + 1e-5
            up = model.loss_and_gradients(x, y)[0]
            w[pos] = old - 1e-5
            down = model.loss_and_gradients(x, y)[0]
            w[pos] = old
            assert grads[layer][idx] == pytest.approx((up - down) / 2e-5, rel=1e-3, abs=1e-6)
        bias = model.biases[layer]
        j = int(rng.integers(bias.size))
        bias[j] += 1e-5
        up = model.loss_and_gradients(x, y)[0]
        bias[j] -= 2e-5
        down = model.loss_and_gradients(x, y)[0]
        bias[j] += 1e-5
        assert grads[layer][w.size + j] == pytest.approx((up - down) / 2e-5, rel=1e-3, abs=1e-6)


def test_same_seed_same_model_and_gradients_other_seed_other_model():
    data = dataset.load(1)
    x, y = data.x_train[:32], data.y_train[:32]
    spec = ModelSpec("cnn", (32,), 16)
    a, b = spec.build(64, 10, seed=5), spec.build(64, 10, seed=5)
    assert all(np.array_equal(p, q) for p, q in zip(a.get_flat(), b.get_flat()))
    la, ga = a.loss_and_gradients(x, y)
    lb, gb = b.loss_and_gradients(x, y)
    assert la == lb and all(np.array_equal(p, q) for p, q in zip(ga, gb))
    other = spec.build(64, 10, seed=6)
    assert not np.array_equal(a.get_flat()[1], other.get_flat()[1])


@pytest.mark.slow
def test_cnn_learns_the_digits_with_the_parameter_servers_optimiser():
    data = dataset.load(1)
    model = SmallCNN(filters=16, hidden=32, classes=10, seed=1)
    start_loss, start_acc = model.evaluate(data.x_test, data.y_test)
    opt = MomentumSGD(lr=0.05, momentum=0.9)
    per_epoch = dataset.rounds_per_epoch(data, 1, 64)
    for rnd in range(60):
        idx = dataset.batch_indices(len(data.y_train), 64, rnd, per_epoch, 1, 0)
        _, grads = model.loss_and_gradients(data.x_train[idx], data.y_train[idx])
        model.set_flat(opt.step(model.get_flat(), grads))
    loss, acc = model.evaluate(data.x_test, data.y_test)
    assert start_acc < 0.3 and acc > 0.85 and loss < start_loss / 3


def test_model_flags_select_and_check_the_model():
    ap = argparse.ArgumentParser()
    add_model_arguments(ap)
    spec = model_spec(ap.parse_args(["--model", "cnn", "--hidden", "24", "--filters", "8"]))
    model = spec.build(dataset.FEATURES, dataset.CLASSES, seed=1)
    assert isinstance(model, SmallCNN) and model.layer_sizes() == [80, 128 * 24 + 24, 250]
    assert spec.num_layers == model.num_layers
    default = model_spec(ap.parse_args([]))
    mlp = default.build(dataset.FEATURES, dataset.CLASSES, seed=1)
    assert isinstance(mlp, MLP) and mlp.layer_sizes() == [64 * 64 + 64, 650]
    assert default.num_layers == 2 and default.describe() == {"kind": "mlp", "hidden": [64]}
    assert spec.describe() == {"kind": "cnn", "hidden": [24], "filters": 8}


@pytest.mark.parametrize("spec, words", [
    (dict(kind="rnn"), "--model"),
    (dict(kind="cnn", hidden=(32, 16)), "one --hidden"),
    (dict(kind="cnn", hidden=(32,), filters=0), "--filters"),
    (dict(kind="mlp", hidden=(0,)), "--hidden"),
])
def test_bad_model_flags_are_one_line_errors(spec, words):
    with pytest.raises(ConfigError, match=words) as err:
        ModelSpec(**spec)
    assert "\n" not in str(err.value)


def test_cnn_needs_the_digits_images():
    with pytest.raises(ConfigError, match="8x8"):
        ModelSpec("cnn", (32,), 16).build(features=30, classes=10, seed=1)


def test_digits_read_from_the_file_equal_scikit_learns_loader():
    from sklearn.datasets import load_digits

    assert dataset.digits_file() is not None      # else every agent pays scikit-learn's import
    reference = load_digits()
    data = dataset.load(7)
    order = np.random.default_rng(7).permutation(len(reference.target))
    x, y = (reference.data / 16.0).astype(np.float32)[order], reference.target[order]
    n_test = int(len(y) * dataset.TEST_FRACTION)
    np.testing.assert_array_equal(data.x_test, x[:n_test])
    np.testing.assert_array_equal(data.x_train, x[n_test:])
    np.testing.assert_array_equal(data.y_test, y[:n_test])
    np.testing.assert_array_equal(data.y_train, y[n_test:])
    assert data.y_train.dtype == np.int64 and data.x_train.dtype == np.float32
