"""What the DDP hook and its server agree on before the first bucket: the layout (parameter
names and sizes, and what differs between two), bounds by parameter name, the job's flags."""
from __future__ import annotations

import pytest

from hosts.ddp.flags import parse_flags, transport_config
from hosts.ddp.layout import Layout, layer_bounds, parse_name_bounds
from hosts.errors import ConfigError
from hosts.training.models import ModelSpec

pytest.importorskip("torch")


def _layout(kind: str = "resnet", **kw) -> Layout:
    return Layout.of(ModelSpec(kind, **kw).module(64, 10, 1))


def test_the_layout_is_the_trainable_parameters_in_order_and_survives_json():
    layout = _layout("torch-mlp", hidden=(16,))
    assert layout.names == ("layers.0.weight", "layers.0.bias", "layers.1.weight", "layers.1.bias")
    assert layout.sizes == (1024, 16, 160, 10) and layout.elements == 1210
    assert Layout.from_json(layout.as_json()) == layout
    assert layout.difference(layout) is None


def test_a_differing_layout_is_named_by_its_first_differing_parameter():
    small, wide = _layout("torch-mlp", hidden=(16,)), _layout("torch-mlp", hidden=(32,))
    assert small.difference(wide) == ("parameter 0 is 'layers.0.weight' of 2048 elements where "
                                      "the job has 'layers.0.weight' of 1024")
    deeper = _layout("torch-mlp", hidden=(16, 16))
    assert small.difference(deeper).startswith("6 parameters (1482 elements) where the job has 4")


@pytest.mark.parametrize("record", [None, [], {"names": ["a"], "sizes": [0]},
                                    {"names": ["a", "b"], "sizes": [3]},
                                    {"names": [1], "sizes": [3]}, {"names": [], "sizes": []}])
def test_a_malformed_layout_is_refused(record):
    with pytest.raises(ConfigError):
        Layout.from_json(record)


def test_bounds_by_parameter_name_first_match_wins_and_a_stray_pattern_is_an_error():
    layout = _layout("resnet")
    pairs = parse_name_bounds(["*norm*=0", "classifier.*=0.02", "stage*.conv*=0.3"])
    bounds = dict(zip(layout.names, layer_bounds(layout, 0.1, pairs)))
    assert bounds["stem_norm.weight"] == bounds["stage2.norm1.bias"] == 0.0
    assert bounds["classifier.weight"] == 0.02 and bounds["stage1.conv2.weight"] == 0.3
    assert bounds["stem.weight"] == bounds["stage2.skip.weight"] == 0.1
    with pytest.raises(ConfigError, match="'head.*' matches no parameter"):
        layer_bounds(layout, 0.1, parse_name_bounds(["head.*=0.1"]))
    for bad in (["norm"], ["=0.1"], ["norm=x"], ["norm=1.5"]):
        with pytest.raises(ConfigError, match="--name-bound"):
            parse_name_bounds(bad)


def test_the_job_flags_become_per_layer_bounds_of_the_layout():
    layout = _layout("resnet")
    config = transport_config(parse_flags("--bound 0.2 --name-bound '*norm*=0'"), layout, 1)
    assert config.bounds.scope == "layer"
    assert [b for n, b in zip(layout.names, config.bounds.push) if "norm" in n] == [0.0] * 10
    assert max(config.bounds.push) == 0.2
    plain = transport_config(parse_flags([]), layout, 1)
    assert plain.bounds.scope == "tensor" and set(plain.bounds.push) == {0.1}
    with pytest.raises(ConfigError, match="transport flags: .*--nope"):
        parse_flags("--nope")
    with pytest.raises(ConfigError, match="use one"):
        transport_config(parse_flags("--layer-bounds 0.1 --name-bound 'stem*=0'"), layout, 1)


@pytest.mark.parametrize("argv,message", [
    (["--ranks", "2"], "no training script"),
    (["--ranks", "0", "--", "x.py"], "--ranks 0 must be at least 1"),
    (["--ranks", "2", "--backend", "gloo", "--bound", "0.1", "--", "x.py"],
     "--backend gloo takes no transport flags"),
    (["--ranks", "2", "--hole-fill", "nope", "--", "x.py"], "transport flags: argument --hole-fill"),
])
def test_the_launcher_refuses_bad_input_in_one_line_before_starting_anything(capsys, argv, message):
    from hosts.ddp import launch
    assert launch.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
