"""Experiment 3 (PLOT bounds) without a network: the bounds each arm gets (profiled, cached or
configured), the agreement check of host and switch bounds, and its summary and plots."""
from __future__ import annotations

from dataclasses import replace

import pytest

from experiments import config as configs
from experiments import plot_bounds as pb
from experiments import plot_profile
from experiments.lossy_training import settings_from_config
from experiments import report
from experiments.records import ResultsDir


def _tiny(tmp_path, **params):
    raw = {"name": "plot_bounds", "rounds": 3, "chunk_elems": 64,
           "model": {"hidden": "16", "batch": 32, "lr": 0.1},
           "params": {"profile": {"seeds": [1], "rates": [0.05, 0.2], "tolerance": 0.005,
                                  "cache_dir": str(tmp_path / "cache")}, **params},
           "arms": [{"name": "per_layer", "params": {"bounds": "per_layer"}},
                    {"name": "uniform", "params": {"bounds": "uniform"}},
                    {"name": "tcp", "transport": "tcp", "tcp_cc": "cubic"}]}
    return configs.from_dict(raw, "t.yaml")


def test_shipped_config_trains_what_the_profiler_reproduces():
    cfg = configs.load(configs.default_path("plot_bounds"))
    s = plot_profile.profile_settings(cfg)
    assert (s.hidden, s.workers, s.batch, s.rounds, s.lr, s.momentum, s.chunk_elems) == \
        ((128, 64, 32), 3, 64, 60, 0.05, 0.9, 360)
    # PLOT profiles with zero filling; the jobs keep their own filling (stated beside it)
    assert s.hole_fill == "zero" and s.pull_fraction == 0.25
    assert settings_from_config(cfg).hole_fill == "mean-delivered"
    assert cfg.topology.background_flows > 0 and cfg.repetitions >= 3


def test_profile_is_cached_by_its_inputs(tmp_path, capsys):
    cfg = _tiny(tmp_path)
    bounds, record = pb.profiled_bounds(cfg, log=lambda s: None)
    assert record["source"].startswith("profiled now") and len(bounds) == 2
    again, record2 = pb.profiled_bounds(cfg, log=lambda s: None)
    assert again == bounds and record2["source"].startswith("cache ")
    assert record2["drops"] == record["drops"]
    other = replace(cfg, params={**cfg.params, "profile": {**cfg.params["profile"], "seeds": [2]}})
    _, record3 = pb.profiled_bounds(other, log=lambda s: None)
    assert record3["source"].startswith("profiled now")      # other inputs, other cache entry
    assert len(list((tmp_path / "cache").glob("*.json"))) == 2


def test_arms_get_per_layer_uniform_or_no_bounds(tmp_path):
    cfg = pb.setup(_tiny(tmp_path, bounds=[0.2, 0.05]))
    assert cfg.params["profile_record"]["source"].startswith("configured")
    assert pb.arm_bounds(cfg, "per_layer") == [0.2, 0.05]
    assert pb.arm_bounds(cfg, "uniform") == [0.05, 0.05]
    assert pb.arm_bounds(cfg, "tcp") is None


def test_sides_agree_only_when_hosts_and_switches_hold_the_same_bounds():
    m = {"hosts_push_bounds": [0.2, 0.05], "switch_push_bounds": [0.2, 0.05],
         "hosts_pull_bounds_worker": [0.05, 0.0125], "switch_pull_bounds": [0.05, 0.0125]}
    assert pb._agree(m)
    assert not pb._agree({**m, "switch_push_bounds": [0.2, 0.1]})
    assert not pb._agree({**m, "switch_pull_bounds": []})


def _run(arm, rep, p99, tta, acc, bounds):
    metrics = {"round_time_p99_s": p99, "time_to_target_s": tta, "final_accuracy": acc,
               "train_time_s": 10 * p99, "violations": 0, "bounds": bounds,
               "accuracy_curve": [[1.0, 5, acc]]}
    if bounds:
        metrics.update(hosts_push_bounds=bounds, switch_push_bounds=bounds,
                       hosts_pull_bounds_worker=[b / 4 for b in bounds],
                       switch_pull_bounds=[b / 4 for b in bounds], sides_agree=True)
    return {"arm": arm, "rep": rep, "ok": True, "error": None, "elapsed_s": 1.0, "metrics": metrics,
            "switch": {}, "conditions": {"load1_end": 1.0, "switch_dropped": False}}


@pytest.mark.slow
def test_summary_has_every_figure_the_sides_and_the_profile(tmp_path):
    cfg = pb.setup(_tiny(tmp_path))
    rd = ResultsDir.create(tmp_path / "res", "plot_bounds")
    for rep in range(3):
        for arm, p99, tta in (("per_layer", 0.3, 10.0), ("uniform", 0.45, 12.0), ("tcp", 0.9, 20.0)):
            rd.append_run(_run(arm, rep, p99, tta, 0.9, pb.arm_bounds(cfg, arm)),
                          [{"round": i, "t_s": i * p99, "round_time_s": p99, "delivered": [1.0, 1.0],
                            "violations": 0, "accuracy": None} for i in range(5)])
    summary_path, plots = report.finish(pb, cfg, rd)
    text = summary_path.read_text()
    for figure in pb.FIGURES:
        assert f"| {figure.label} |" in text
    assert "| 1.5 ± 0 x (n=3)" in text                     # uniform / per-layer p99
    assert "| 3 ± 0 x (n=3)" in text                       # TCP / per-layer p99
    assert "-16.7 ± 0 % (n=3)" in text                     # (10 - 12) / 12
    assert "Bounds each side used" in text and "Profile: mean accuracy drop" in text
    assert len(plots) == 6 and all(p.read_bytes()[:4] == b"\x89PNG" for p in plots)
    assert plots[0].name == "profile.png"                   # the measured profile, drawn
    assert plots[-1].name == "round_breakdown.png" and "Per-round breakdown" in text
    # no tensor arm in this config: its rows say so rather than inventing a figure
    assert "| p99 round time, whole-tensor bound / per-layer bounds | n/a (PLOT" in text


@pytest.mark.parametrize("bad", [[], None])
def test_no_configured_bounds_means_profiling(tmp_path, bad):
    cfg = _tiny(tmp_path, bounds=bad)
    bounds, record = pb.profiled_bounds(cfg, log=lambda s: None)
    assert record["source"].startswith("profiled now") and all(0 <= b <= 0.2 for b in bounds)


def test_no_priority_arms_get_a_policy_without_priority_queues(tmp_path):
    from controller.policy import parse_policy

    cfg = configs.load(configs.default_path("plot_bounds"))
    assert pb.prioritized(cfg, "per_layer") and not pb.prioritized(cfg, "per_layer-no-priority")
    assert not pb.prioritized(cfg, "tcp_cubic_ecn")
    assert pb._arm_of(cfg, pb.PER_LAYER) == "per_layer"
    assert pb._arm_of(cfg, pb.PER_LAYER, priority=False) == "per_layer-no-priority"
    assert "--priority-hints" in cfg.arm("per_layer-no-priority").agent_args
    doc = plot_profile.policy_document([0.1, 0.0], [4], prioritize=False)
    [job] = parse_policy(doc).jobs
    assert job.features.prioritize is False
    assert parse_policy(plot_profile.policy_document([0.1, 0.0], [4])).jobs[0].features.prioritize


def test_tensor_arm_gets_one_bound_with_the_per_layer_budget_on_both_sides(tmp_path):
    raw = configs.to_dict(configs.load("experiments/configs/plot_bounds_cnn.yaml"))
    raw["params"]["bounds"] = [0.5, 0.1, 0.5]
    cfg = pb.setup(configs.from_dict({k: v for k, v in raw.items() if k != "applied_quick"}, "cnn.yaml"))
    assert cfg.params["layer_sizes"] == [160, 8224, 330]
    budget = 0.5 * 160 + 0.1 * 8224 + 0.5 * 330
    assert cfg.params["tensor_bound"] == pytest.approx(budget / 8714, abs=1e-6)
    assert cfg.params["tensor_bound"] * 8714 <= budget                 # never looser
    assert pb.arm_bounds(cfg, "tensor") == [cfg.params["tensor_bound"]] * 3
    assert pb.arm_bounds(cfg, "uniform") == [0.1] * 3
    assert pb.arm_bounds(cfg, "per_layer") == [0.5, 0.1, 0.5]
    assert cfg.label == "plot_bounds-cnn"


@pytest.mark.slow
def test_summary_compares_per_layer_with_the_whole_tensor_bound(tmp_path):
    cfg = pb.setup(_tiny(tmp_path, bounds=[0.3, 0.1]))
    cfg = replace(cfg, arms=(*cfg.arms, configs.Arm(name="tensor", params={"bounds": "tensor"})))
    rd = ResultsDir.create(tmp_path / "res", "plot_bounds")
    for rep in range(3):
        for arm, p99, acc in (("per_layer", 0.3, 0.92), ("uniform", 0.3, 0.92), ("tensor", 0.15, 0.9),
                              ("tcp", 0.9, 0.93)):
            rd.append_run(_run(arm, rep, p99, 10.0, acc, pb.arm_bounds(cfg, arm)),
                          [{"arm": arm, "rep": rep, "round": i, "t_s": i * p99, "round_time_s": p99,
                            "delivered": [0.99, 0.8] if arm == "tensor" else [0.9, 0.95],
                            "violations": 0, "accuracy": None} for i in range(5)])
    text, _ = report.finish(pb, cfg, rd)
    text = text.read_text()
    assert "| p99 round time, whole-tensor bound / per-layer bounds |" in text
    assert "| 0.5 ± 0 x (n=3)" in text                      # tensor / per-layer p99
    assert "| 2 ± 0 points (n=3) | same rounds, same seeds; per_layer minus tensor |" in text
    assert "tensor: push loss per layer" in text
    assert "tensor: the pooled budget let holes gather in layer 1 (20.0 % on average, its per-layer bound 0.1)" in text
    assert "per_layer: the pooled budget" not in text
    assert "so the per-layer arm may leave at most" in text


def test_torch_config_takes_its_bounds_from_the_published_profile():
    cfg = pb.setup(configs.load(configs.default_path("plot_bounds", "torch-cnn")))
    assert cfg.label == "plot_bounds-torch-cnn" and cfg.model.kind == "torch-cnn"
    assert report.command_line(cfg) == \
        'make experiment NAME=plot_bounds ARGS="--config experiments/configs/plot_bounds_torch_cnn.yaml"'
    # the published profile: dense.weight tolerates 20 %, every other parameter 80 %
    record = cfg.params["profile_record"]
    assert record["layer_names"] == ["conv.weight", "conv.bias", "dense.weight", "dense.bias",
                                     "out.weight", "out.bias"]
    assert cfg.params["per_layer_bounds"] == [0.8, 0.8, 0.2, 0.8, 0.8, 0.8]
    assert cfg.params["uniform_bound"] == 0.2
    assert cfg.params["layer_sizes"] == [144, 16, 16384, 64, 640, 10]
    assert pb.arm_bounds(cfg, "tensor") == [plot_profile.tensor_bound(
        [0.8, 0.8, 0.2, 0.8, 0.8, 0.8], [144, 16, 16384, 64, 640, 10])] * 6
    assert record["source"].startswith("published profile docs/results/torch_profile-torch-cnn/")
    # the summary's profile table names the parameters, with the profile's drops and bounds
    table = pb._profile_table(cfg)
    assert table.rows[2][0] == "layer 2 (dense.weight)" and table.rows[2][-1] == "0.2"
    assert "published profile" in table.title


@pytest.mark.parametrize("change, words", [
    (lambda doc: doc["model"].update(filters=8), "is of model"),
    (lambda doc: doc["tolerances"].pop("out.bias"), "no tolerance for out.bias"),
    (lambda doc: doc.pop("tolerances"), "not a torch_profile profile.json"),
])
def test_a_published_profile_of_another_model_is_a_one_line_config_error(tmp_path, change, words):
    import json

    src = pb.REPO / "docs/results/torch_profile-torch-cnn/profile.json"
    doc = json.loads(src.read_text())
    change(doc)
    path = tmp_path / "profile.json"
    path.write_text(json.dumps(doc))
    cfg = configs.load(configs.default_path("plot_bounds", "torch-cnn"))
    cfg = replace(cfg, params={**cfg.params, "profile": {"published": str(path)}})
    with pytest.raises(configs.ConfigError) as info:
        pb.setup(cfg)
    assert words in str(info.value) and "\n" not in str(info.value)


def test_the_title_names_tcp_only_when_a_tcp_arm_runs(tmp_path):
    cfg = _tiny(tmp_path)
    assert "vs TCP" in pb.title(cfg)
    without = replace(cfg, arms=[a for a in cfg.arms if a.transport != "tcp"])
    assert "vs TCP" not in pb.title(without) and pb.title(without).startswith("PLOT: per-layer")
