"""The configs written for the simulator (experiments/configs/ns3/: the regime map at datacenter
ratios, LTP's incast at 10 Gb/s with ResNet-50-size gradients, PCN's tree at 10 Gb/s): their --quick runs on ns-3, in
this process (ns-3 is imported once), and what the harness makes of their settings."""
from __future__ import annotations

import json
from dataclasses import replace

import pytest

from experiments import cli
from experiments import config as configs
from experiments.config import CONFIG_DIR
from experiments.backends.ns3 import harness, lossy_arm
from sim.errors import SimError
from sim.layer_split import resnet50_stages, split_parameters
from sim.lossy import transport_config

NS3_CONFIGS = sorted(p.stem for p in (CONFIG_DIR / "ns3").glob("*.yaml"))


def _quick(name: str, tmp_path) -> list[dict]:
    code = cli.main([name, "--quick", "--backend", "ns3", "--config", str(CONFIG_DIR / "ns3" / f"{name}.yaml"),
                     "--out", str(tmp_path)])
    assert code == 0
    (run_dir,) = (tmp_path / name).iterdir()
    summary = (run_dir / "summary.md").read_text()
    assert "SIMULATED with ns-3" in summary
    assert (f"`python -m experiments {name} --quick --backend ns3 --config experiments/configs/ns3/{name}.yaml`"
            in summary)
    saved = configs.load_saved(run_dir / "config.yaml")
    assert saved.params["skipped_arms"] == []          # every arm runs on ns-3, the lossy ones too
    return [json.loads(line) for line in (run_dir / "runs.jsonl").read_text().splitlines()]


def test_every_ns3_config_is_known():
    assert NS3_CONFIGS == ["dblp_microbursts", "dlcp_ablation", "ltp_incast", "ltp_incast_schedule",
                           "ltp_incast_xval", "pcn",
                           "regimes", "regimes_ccloss", "regimes_pull", "regimes_schedule"]


@pytest.mark.timeout(240)
@pytest.mark.slow
def test_regime_map_quick_on_ns3(tmp_path, capsys):
    runs = {r["arm"]: r for r in _quick("regimes", tmp_path)}
    capsys.readouterr()
    assert set(runs) == {f"{arm}.{cell}" for arm in ("gradlane", "mlt", "tcp-cubic", "tcp-cubic-rto")
                         for cell in ("l0.b25", "l2.b25")}
    assert all(r["ok"] and r["backend"] == "ns3" for r in runs.values())
    # the lossy arms ran the agents' transport with their cell's timers, every push within its bound
    for arm in ("gradlane.l2.b25", "mlt.l2.b25"):
        lossy = runs[arm]
        assert lossy["metrics"]["rounds"] == 3 and lossy["metrics"]["retransmissions"] > 0
        probe_ms = lossy["transport_config"]["probe_ms"]
        assert probe_ms == pytest.approx(3 * (0.03 + 64 / 833333.3 * 1000), rel=1e-2)
        assert lossy["transport_config"]["ack_delay_ms"] == pytest.approx(probe_ms / 3, rel=1e-2)
    # the lossy cell's bottleneck dropped packets at random; the loss-free one none
    assert runs["tcp-cubic.l2.b25"]["sim_link_drops"]["s1-s2"] > 0
    assert runs["tcp-cubic.l0.b25"]["sim_link_drops"] == {}
    tuned = runs["tcp-cubic-rto.l2.b25"]["metrics"]
    assert tuned["rto_min_ms"] == pytest.approx(3 * tuned["rtt_ms"]) and tuned["rtt_ms"] == pytest.approx(0.03)
    assert runs["tcp-cubic.l2.b25"]["metrics"]["rto_min_ms"] == 200.0
    # at 2 % loss and a 30 us RTT the default RTO_min (6,700 RTTs) is what a round waits for
    assert tuned["round_time_p99_s"] < runs["tcp-cubic.l2.b25"]["metrics"]["round_time_p99_s"]


@pytest.mark.timeout(240)
@pytest.mark.slow
def test_loss_response_quick_on_ns3(tmp_path, capsys):
    """regimes_ccloss: at 2 % random loss the reliable pull's windows are cut by loss under the
    default rule and never with --cc-loss congested (no queue showed congestion), whose losses
    are counted as spared instead; both deliver the whole pull."""
    code = cli.main(["regimes", "--quick", "--backend", "ns3", "--config",
                     str(CONFIG_DIR / "ns3" / "regimes_ccloss.yaml"), "--out", str(tmp_path)])
    capsys.readouterr()
    assert code == 0
    (run_dir,) = (tmp_path / "regimes-ccloss").iterdir()
    pulls: dict[str, list[dict]] = {}
    for line in (run_dir / "rounds.jsonl").read_text().splitlines():
        rec = json.loads(line)
        pulls.setdefault(rec["arm"], []).append(rec["repairs"]["pull"])
    assert set(pulls) == {"gradlane.l2.b25", "gradlane-loss-congested.l2.b25", "mlt.l2.b25"}
    always, congested = pulls["gradlane.l2.b25"], pulls["gradlane-loss-congested.l2.b25"]
    assert sum(p["cc_loss_cuts"] for p in always) > 0 and sum(p["cc_losses_spared"] for p in always) == 0
    assert sum(p["cc_loss_cuts"] for p in congested) == 0 and sum(p["cc_losses_spared"] for p in congested) > 0
    assert all(p["resent"] > 0 for p in always + congested)


@pytest.mark.timeout(240)
@pytest.mark.slow
def test_pull_schedule_quick_on_ns3(tmp_path, capsys):
    """regimes_schedule at the map's 1 MB per worker (where the PS's port, not a window, sets
    the pull's pace), without loss: the serial arm's pulls end one after another in rank order,
    the default's within a small part of a pull of each other; both deliver the whole pull."""
    code = cli.main(["regimes", "--quick", "--backend", "ns3", "--config",
                     str(CONFIG_DIR / "ns3" / "regimes_schedule.yaml"), "--arms", "gradlane,gradlane-serial",
                     "--set", "params.sim_gradient_params=250000", "--set", "params.grid.loss_pct=[0]",
                     "--out", str(tmp_path)])
    capsys.readouterr()
    assert code == 0
    (run_dir,) = (tmp_path / "regimes-schedule").iterdir()
    ends: dict[str, list[list[float]]] = {}
    for line in (run_dir / "rounds.jsonl").read_text().splitlines():
        rec = json.loads(line)
        ends.setdefault(rec["arm"], []).append([s[0] for s in rec["pull_sessions"]])
    assert set(ends) == {"gradlane.l0.b25", "gradlane-serial.l0.b25"}
    # (the last round's pulls may still be on their way when the job ends)
    for serial, together in zip(ends["gradlane-serial.l0.b25"][:-1], ends["gradlane.l0.b25"][:-1]):
        assert None not in serial and None not in together
        assert serial == sorted(serial) and serial[-1] > 4 * serial[0]
        assert max(together) < 1.1 * min(together)
    runs = {r["arm"]: r for r in map(json.loads, (run_dir / "runs.jsonl").read_text().splitlines())}
    assert runs["gradlane-serial.l0.b25"]["transport_config"]["pull_schedule"] == "serial"
    assert runs["gradlane.l0.b25"]["transport_config"]["pull_schedule"] == "together"


@pytest.mark.timeout(240)
@pytest.mark.slow
def test_paper_scale_incast_quick_on_ns3(tmp_path, capsys):
    runs = _quick("ltp_incast", tmp_path)
    capsys.readouterr()
    assert {r["arm"] for r in runs} == {"gradlane", "tcp-cubic", "tcp-cubic-rto"}
    assert all(r["ok"] and r["metrics"]["gradient_bytes"] == 1_000_000 for r in runs)
    (gradlane,) = (r for r in runs if r["arm"] == "gradlane")
    assert gradlane["metrics"]["push_packets_per_round"] == 8 * sum(-(-n // 360) for n in split_parameters(250_000))


@pytest.mark.timeout(240)
@pytest.mark.slow
def test_pcn_tree_at_10_gbps_quick_on_ns3(tmp_path, capsys):
    runs = {r["arm"]: r for r in _quick("pcn", tmp_path)}
    capsys.readouterr()
    assert set(runs) == {"tcp-no-pcn", "tcp-pcn"}
    for run in runs.values():
        m = run["metrics"]
        assert run["ok"] and m["bursts_recorded"] == 2          # 1 burst x 2 workers, acknowledged
        # 250 packets through a 10 Gb/s uplink take at least 300 us; the scaled timeline leaves room
        assert 300e-6 < m["burst_completion_s"] < 3.75e-3
        assert m["background_throughput_mbps"] > 1000           # the Reno flows fill the uplinks
    starts = {arm: sum(s["pcn_starts"] for s in run["sim_switches"].values()) for arm, run in runs.items()}
    assert starts["tcp-no-pcn"] == 0 and starts["tcp-pcn"] > 0
    # PCN lowered the threshold ahead of each burst: the queue a burst meets is the lower one
    assert runs["tcp-pcn"]["metrics"]["start_queue_pkts"] < runs["tcp-no-pcn"]["metrics"]["start_queue_pkts"]


@pytest.mark.timeout(240)
@pytest.mark.slow
def test_microbursts_at_10_gbps_quick_on_ns3(tmp_path, capsys):
    runs = {r["arm"]: r for r in _quick("dblp_microbursts", tmp_path)}
    capsys.readouterr()
    assert set(runs) == {"mlt", "phase-aware"} and all(r["ok"] for r in runs.values())
    for run in runs.values():
        m = run["metrics"]
        # both planned bursts hit, every drop on the link fell inside one, at the same rounds per arm
        assert [b["round"] for b in m["bursts"]] == [b["round"] for b in m["bursts_planned"]]
        assert m["burst_drops"] > 0 and m["link_drops"] == m["burst_drops"]
        assert m["burst_duration_s"] < 0.01                  # one 10 Gb/s round, not the emulation's
        # the path's timers: probe every 3 x (RTT + the queue's drain)
        assert run["transport_config"]["probe_ms"] == pytest.approx(3 * (0.00975 + 64 / 833333.3 * 1000), rel=1e-2)
    assert runs["mlt"]["metrics"]["bursts_planned"] == runs["phase-aware"]["metrics"]["bursts_planned"]


@pytest.mark.timeout(400)
@pytest.mark.slow
def test_dlcp_fabric_quick_on_ns3(tmp_path, capsys):
    runs = {r["arm"]: r for r in _quick("dlcp_ablation", tmp_path)}
    capsys.readouterr()
    assert set(runs) == {"tcp-dctcp", "tcp-cubic-ecn", "mlt", "gradlane", "gradlane-no-priority",
                         "gradlane-no-selective-drop", "gradlane-no-spray"}
    assert all(r["ok"] and r["backend"] == "ns3" for r in runs.values())
    jobs = runs["gradlane"]["placement"]
    assert len(jobs) == 2 and all(len(j["workers"]) == 2 for j in jobs)
    for arm, run in runs.items():
        m = run["metrics"]
        # 2 jobs x 3 rounds, every worker's push timed; the same background flows in every arm
        assert m["rounds"] == 6 and m["pushes"] == 12, arm
        assert m["background"]["flows"] == runs["tcp-dctcp"]["metrics"]["background"]["flows"] > 0
        assert m["background"]["completed"] > 0 and m["bg_fct_p99_s"] > 0
    gradlane = runs["gradlane"]["metrics"]
    # spraying spreads the jobs' push packets over both spines; each switch's selective drops
    # stay within the 10 % bound of what it classified
    assert min(gradlane["push_per_spine"].values()) > 0.3 * gradlane["push_classified"] / 3
    for arm in ("gradlane", "gradlane-no-priority", "gradlane-no-spray"):
        share = runs[arm]["metrics"]["selective_drop_fraction_max"]
        assert share is not None and share <= 0.1, arm
    assert runs["gradlane-no-selective-drop"]["metrics"]["selective_drops"] == 0
    # baselines get no job policy: no switch classifies their packets
    for arm in ("tcp-dctcp", "mlt"):
        assert runs[arm]["metrics"]["push_classified"] == 0 and runs[arm]["metrics"]["features"] is None
    summary = next((tmp_path / "dlcp_ablation").iterdir()) / "summary.md"
    assert "gradient push tail" in summary.read_text()


def test_dlcp_fabric_needs_its_settings():
    cfg = configs.load(CONFIG_DIR / "ns3" / "dlcp_ablation.yaml", quick=True)
    with pytest.raises(SimError, match="sim_fabric.jobs"):
        harness.setup(replace(cfg, params={**cfg.params, "sim_fabric": {**cfg.params["sim_fabric"], "jobs": 0}}))
    with pytest.raises(SimError, match="fewer than 2"):
        harness.setup(replace(cfg, params={**cfg.params, "sim_fabric": {**cfg.params["sim_fabric"], "jobs": 4}}))
    with pytest.raises(SimError, match="size CDF"):
        harness.setup(replace(cfg, params={**cfg.params, "sim_background": {
            **cfg.params["sim_background"], "size_cdf": [[1000, 0.5], [500, 1.0]]}}))
    with pytest.raises(SimError, match="needs params.sim_fabric"):
        harness.setup(configs.load(configs.default_path("dlcp_ablation"), quick=True))


def test_path_timers_need_the_paths_rtt():
    cfg = configs.load(CONFIG_DIR / "ns3" / "dblp_microbursts.yaml")
    arms = tuple(replace(a, params={"timers_from_path": True}) for a in cfg.arms)
    with pytest.raises(SimError, match="rtt_ms"):
        harness.setup(replace(cfg, arms=arms))


def test_tuned_rto_is_not_floored_at_a_millisecond():
    cfg = harness.setup(configs.load(CONFIG_DIR / "ns3" / "regimes.yaml"))
    tuned = {a.params["bdp_packets"]: a.params["rto_min_ms"] for a in cfg.arms
             if a.params["template"] == "tcp-cubic-rto" and a.params["loss_pct"] == 0}
    assert tuned == {5: pytest.approx(0.018), 25: pytest.approx(0.09), 100: pytest.approx(0.36)}
    settings = harness.tcp_settings(next(a for a in cfg.arms if a.params["template"] == "tcp-cubic-rto"))
    assert settings.clock_granularity_us == 1.0 and settings.delayed_ack_count == 1


def test_gradients_sized_by_parameter_count():
    cfg = configs.load(CONFIG_DIR / "ns3" / "ltp_incast.yaml")
    assert harness.gradient_bytes(cfg) == 4 * 25_557_032
    assert lossy_arm.layer_sizes(cfg) == resnet50_stages()     # the lossy arms' layers
    for bad in (0, 2.5, "many"):
        with pytest.raises(SimError, match="sim_gradient_params"):
            harness.setup(replace(cfg, params={**cfg.params, "sim_gradient_params": bad}))


def test_a_bad_tuned_rto_is_refused_before_any_run():
    cfg = configs.load(CONFIG_DIR / "ns3" / "ltp_incast.yaml")
    arms = tuple(replace(a, params={"rto_min_ms": -1}) if a.name == "tcp-cubic-rto" else a for a in cfg.arms)
    with pytest.raises(SimError, match="rto_min_ms"):
        harness.setup(replace(cfg, arms=arms))


def test_lossy_arms_timers_follow_each_cells_path():
    cfg = harness.setup(configs.load(CONFIG_DIR / "ns3" / "regimes.yaml"))
    probes = {}
    for arm in cfg.arms:
        if arm.params["template"] in ("gradlane", "mlt"):
            flags = arm.params["path_timers"]
            assert list(arm.agent_args[-len(flags):]) == flags
            probes[arm.params["bdp_packets"]] = float(flags[flags.index("--probe-ms") + 1])
            config = transport_config(arm.transport, list(arm.agent_args), 6, 360, 1)
            assert config.send.probe_interval == pytest.approx(probes[arm.params["bdp_packets"]] / 1000)
    # 3 x (RTT + the 64-packet queue's drain at 10 Gb/s): the same rule in every cell
    drain_ms = 64 / 833333.3 * 1000
    assert probes == {b: pytest.approx(3 * (rtt + drain_ms), rel=1e-3)
                      for b, rtt in ((5, 0.006), (25, 0.03), (100, 0.12))}
