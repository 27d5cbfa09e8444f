"""`--backend ns3`: which arms are simulated, and small simulated repetitions of ltp_incast's
arms (TCP, gradlane, MLT) and of pcn's TCP-DDL arms, written in the emulation's record format."""
from __future__ import annotations

import json
from dataclasses import replace

import pytest

from experiments import config as configs
from experiments.records import ResultsDir
from experiments.backends.ns3 import harness
from sim.errors import SimError
from sim.rounds import model_parameters
from sim.topologies import leafspine


def test_model_parameters_match_the_mlp():
    assert model_parameters("128,64") == 17226      # experiments/configs/ltp_incast.yaml says so
    with pytest.raises(SimError):
        model_parameters("12x")


def test_setup_keeps_the_simulated_arms_and_names_the_others():
    cfg = harness.setup(configs.load(configs.default_path("ltp_incast"), quick=True))
    assert {a.transport for a in cfg.arms} == {"tcp", "ltp", "mlt"}
    assert cfg.params["backend"] == "ns3" and cfg.params["skipped_arms"] == []
    pcn = harness.setup(configs.load(configs.default_path("pcn"), quick=True))
    assert [a.name for a in pcn.arms] == ["tcp-no-pcn", "tcp-pcn"]
    assert all("DDL transport gradlane is not simulated" in s for s in pcn.params["skipped_arms"])
    with pytest.raises(SimError):
        harness.setup(configs.load(configs.default_path("plot_bounds"), quick=True))


def test_each_simulated_experiment_declares_its_simulation():
    assert set(harness.simulated_names()) == {"ltp_incast", "pcn", "regimes", "dblp_microbursts", "dlcp_ablation"}
    assert harness.simulation("plot_bounds") is None
    assert harness.simulation("dlcp_ablation").config == "experiments/configs/ns3/dlcp_ablation.yaml"


def test_leafspine_at_dlcp_scale_is_a_valid_description():
    topo = leafspine(9, 4, 16)
    assert len(topo.hosts) == 144 and len(topo.switches) == 13
    assert len(topo.hosts_with_role("worker")) == 143


def test_ltp_incast_arms_write_records(tmp_path):
    cfg = harness.setup(configs.load(configs.default_path("ltp_incast"), quick=True))
    cfg = replace(cfg, rounds=3, topology=replace(cfg.topology, workers=2))
    rd = ResultsDir.create(tmp_path, cfg.name)
    harness.run(cfg, rd, out=lambda _: None)
    runs = [json.loads(line) for line in rd.runs_path.read_text().splitlines()]
    assert len(runs) == len(cfg.arms) and all(r["ok"] for r in runs)
    assert all(r["backend"] == "ns3" and r["metrics"]["rounds"] == 3 for r in runs)
    rounds = [json.loads(line) for line in (rd.path / "rounds.jsonl").read_text().splitlines()]
    assert len(rounds) == 3 * len(runs) and all(r["round_time_s"] > 0 for r in rounds)


def test_pcn_start_empties_the_queue_before_the_tcp_burst(tmp_path):
    cfg = harness.setup(configs.load(configs.default_path("pcn"), quick=True))
    cfg = replace(cfg, params={**cfg.params, "bursts": 1, "warmup_s": 3.0, "burst_bytes": 100_000})
    rd = ResultsDir.create(tmp_path, cfg.name)
    harness.run(cfg, rd, out=lambda _: None)
    runs = {r["arm"]: r for r in map(json.loads, rd.runs_path.read_text().splitlines())}
    off, on = runs["tcp-no-pcn"]["metrics"], runs["tcp-pcn"]["metrics"]
    assert off["bursts_recorded"] == on["bursts_recorded"] == 2
    assert all(r["ok"] for r in runs.values())
    # ECN Reno keeps the leaf uplinks' queues near the threshold of 40 (marking at 40): the
    # burst finds a queue without PCN; with it, the flows backed off to the threshold of 10
    assert off["start_queue_pkts"] > on["start_queue_pkts"]
    # the worker's TCP burst (policy ddl_flows) is what ended the pending START
    assert runs["tcp-pcn"]["sim_switches"]["l1"]["pcn_starts"] == 1
    assert runs["tcp-pcn"]["sim_switches"]["l1"]["pcn_arrivals"] == 1
    assert (rd.path / runs["tcp-pcn"]["queue_series"]).is_file()


def test_cli_names_an_experiment_it_cannot_simulate(tmp_path, capsys):
    from experiments import cli

    code = cli.main(["plot_bounds", "--quick", "--backend", "ns3", "--out", str(tmp_path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1
    assert len(err) == 1
    assert err[0].startswith("python -m experiments: error: plot_bounds: no arm can be simulated yet: ")
    assert "experiment plot_bounds is not simulated yet" in err[0]
    assert not any(tmp_path.iterdir())       # nothing half-created
