"""Experiment configs: every shipped config loads (full and quick), mistakes are one-line errors."""
from __future__ import annotations

import subprocess
import sys

import pytest
import yaml

import experiments
from experiments import config as configs
from experiments.errors import ConfigError
from support.topology_helpers import REPO

BASE = {"name": "x", "arms": [{"name": "a", "transport": "ltp"}]}


@pytest.mark.parametrize("name", experiments.names())
def test_every_registered_experiment_has_a_valid_config_and_quick_block(name):
    full = configs.load(configs.default_path(name))
    quick = configs.load(configs.default_path(name), quick=True)
    assert full.name == name and quick.is_quick and not full.is_quick
    assert full.repetitions >= 3, "the issue asks for at least 3 repetitions per arm by default"
    assert {a.name for a in quick.arms} <= {a.name for a in full.arms}


def test_quick_overrides_merge_and_only_arms_filters():
    raw = {**BASE, "rounds": 40, "topology": {"workers": 8, "queue_depth": 64},
           "arms": [{"name": "a"}, {"name": "b", "transport": "mlt"}],
           "quick": {"rounds": 5, "topology": {"workers": 2}, "only_arms": ["b"]}}
    cfg = configs.from_dict(raw, "t.yaml", quick=True)
    assert cfg.rounds == 5 and cfg.topology.workers == 2 and cfg.topology.queue_depth == 64
    assert [a.name for a in cfg.arms] == ["b"]


def test_saved_config_reads_back_equal(tmp_path):
    raw = {**BASE, "chunk_elems": 360, "topology": {"bursts": ["1s+1s@0.5"]},
           "arms": [{"name": "t", "transport": "tcp", "tcp_cc": "reno", "tcp_ecn": "on", "workers": 2,
                     "topology": {"workers": 4}, "params": {"k": 1}}]}
    cfg = configs.from_dict(raw, "t.yaml", quick=True)
    configs.save(cfg, tmp_path / "config.yaml")
    back = configs.load_saved(tmp_path / "config.yaml")
    assert configs.to_dict(back) == configs.to_dict(cfg) and back.is_quick


def test_arm_topology_override_and_repetition_cap():
    raw = {**BASE, "repetitions": 2, "arms": [{"name": "a", "topology": {"workers": 2}, "repetitions": 5}]}
    cfg = configs.from_dict(raw, "t.yaml")
    arm = cfg.arms[0]
    assert cfg.topology_of(arm).workers == 2 and cfg.topology.workers == 3
    assert cfg.repetitions_of(arm) == 2


@pytest.mark.parametrize("change, message", [
    ({"repetitons": 3}, "unknown key"),
    ({"rounds": "many"}, "rounds: 'many' is not an integer"),
    ({"arms": []}, "non-empty list"),
    ({"arms": [{"name": "a", "transport": "quic"}]}, "transport 'quic'"),
    ({"arms": [{"name": "a", "tcp_cc": "reno"}]}, "need transport tcp"),
    ({"arms": [{"name": "a"}, {"name": "a"}]}, "used twice"),
    ({"arms": [{"name": "a b"}]}, "name may hold"),
    ({"arms": [{"name": "a", "workers": 9}]}, "outside 1..3"),
    ({"topology": {"name": "ring"}}, "name 'ring'"),
    ({"topology": {"policy": "nope.yaml"}}, "policy file nope.yaml not found"),
    ({"only_arms": ["zz"]}, "no arm named zz"),
])
def test_mistakes_are_one_line_errors_naming_the_key(change, message):
    with pytest.raises(ConfigError, match=message) as info:
        configs.from_dict({**BASE, **change}, "t.yaml")
    assert "\n" not in str(info.value) and str(info.value).startswith("t.yaml")


def test_an_unknown_key_error_lists_only_the_keys_a_file_may_write():
    with pytest.raises(ConfigError) as info:
        configs.from_dict({**BASE, "repetitons": 3}, "t.yaml")
    known = str(info.value).split("(known: ")[1].rstrip(")").split(", ")
    assert "rounds" in known and "quick" in known
    assert "source" not in known and "is_quick" not in known


@pytest.mark.slow
def test_cli_reports_a_bad_config_in_one_line_without_traceback(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"name": "ltp_incast", "arms": [{"name": "a", "transport": "x"}]}))
    done = subprocess.run([sys.executable, "-m", "experiments", "ltp_incast", "--config", str(bad)],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "transport 'x'" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_cli_lists_the_experiments():
    done = subprocess.run([sys.executable, "-m", "experiments", "--list"], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0
    for name in experiments.names():
        assert name in done.stdout


def test_a_variant_config_names_its_results_and_its_command(tmp_path):
    from experiments import report

    cfg = configs.load(configs.default_path("plot_bounds", "cnn"))
    assert cfg.name == "plot_bounds" and cfg.variant == "cnn" and cfg.label == "plot_bounds-cnn"
    assert cfg.model.kind == "cnn" and cfg.model.worker_args()[:4] == ("--model", "cnn", "--filters", "16")
    assert report.command_line(cfg) == \
        'make experiment NAME=plot_bounds ARGS="--config experiments/configs/plot_bounds_cnn.yaml"'
    quick = configs.load(configs.default_path("plot_bounds", "cnn"), quick=True)
    assert quick.repetitions == 1 and "--quick" in report.command_line(quick)
    assert configs.load(configs.default_path("plot_bounds")).label == "plot_bounds"
    configs.save(cfg, tmp_path / "config.yaml")
    assert configs.load_saved(tmp_path / "config.yaml").label == "plot_bounds-cnn"
    # the MLP configs' agents get no model flags beyond the widths they always had
    assert configs.from_dict(BASE, "t.yaml").model.worker_args() == ("--hidden", "64", "--batch", "32")


@pytest.mark.parametrize("extra, words", [
    ({"model": {"kind": "rnn"}}, "model: --model 'rnn'"),
    ({"model": {"kind": "cnn", "hidden": "32,16"}}, "one --hidden"),
    ({"variant": "a b"}, "variant"),
])
def test_bad_model_or_variant_is_a_one_line_config_error(extra, words):
    with pytest.raises(ConfigError, match=words) as err:
        configs.from_dict({**BASE, **extra}, "t.yaml")
    assert "\n" not in str(err.value)


def test_arms_selects_arms_and_the_command_names_them():
    from experiments import cli, report

    args = cli._parser().parse_args(["ltp_incast", "--arms", "mlt,tcp-cubic"])
    cfg = cli._load_config("ltp_incast", args)
    assert [a.name for a in cfg.arms] == ["mlt", "tcp-cubic"]
    assert report.command_line(cfg) == 'make experiment NAME=ltp_incast ARGS="--arms mlt,tcp-cubic"'
    with pytest.raises(ConfigError, match="no arm named nope"):
        cli._load_config("ltp_incast", cli._parser().parse_args(["ltp_incast", "--arms", "mlt,nope"]))


def test_set_overrides_nested_keys_and_the_command_repeats_them():
    from experiments import cli, report

    args = cli._parser().parse_args(["ltp_incast", "--set", "topology.loss_pct=1", "--set", "rounds=6",
                                     "--arms", "mlt"])
    cfg = cli._load_config("ltp_incast", args)
    assert cfg.topology.loss_pct == 1 and cfg.rounds == 6 and [a.name for a in cfg.arms] == ["mlt"]
    assert cfg.topology.workers == configs.load(configs.default_path("ltp_incast")).topology.workers
    assert report.command_line(cfg) == ('make experiment NAME=ltp_incast '
                                        'ARGS="--arms mlt --set topology.loss_pct=1 --set rounds=6"')


@pytest.mark.parametrize("setting, words", [
    ("rounds", "expected KEY=VALUE"),
    ("topology..loss_pct=1", "expected KEY=VALUE"),
    ("rounds=[1", "not valid YAML"),
    ("topology=1", "is a section"),
])
def test_bad_set_is_a_one_line_config_error(setting, words):
    from experiments import cli

    settings = [setting] if setting != "topology=1" else ["topology.loss_pct=1", "topology=1"]
    args = cli._parser().parse_args(["ltp_incast", *[a for s in settings for a in ("--set", s)]])
    with pytest.raises(ConfigError, match=words) as err:
        cli._load_config("ltp_incast", args)
    assert "\n" not in str(err.value)


def test_set_value_is_validated_like_the_file():
    from experiments import cli

    args = cli._parser().parse_args(["ltp_incast", "--set", "topology.loss_pct=200"])
    with pytest.raises(ConfigError, match="loss_pct within 0..100"):
        cli._load_config("ltp_incast", args)
