"""dlcp_ablation's parts that need no network: the per-job policy it installs (accepted by the
controller's own policy loader), the evidence it reads from gradctl's counters, the arms' roles,
and its summary/plots from records written the way the runner writes them."""
from __future__ import annotations

import pytest
import yaml

from controller.policy import parse_policy
from experiments import config as configs
from experiments import dlcp_ablation as dlcp
from experiments import report
from experiments.records import Results, ResultsDir
from experiments.training import job_policy
from controller.topologies import TopoParams, build_topology

POLICY = "controller/policies/default.yaml"


def _config():
    raw = {"name": "dlcp_ablation", "topology": {"name": "leafspine", "workers": 5, "background": 2},
           "params": {"target_accuracy": 0.8},
           "arms": [{"name": "tcp", "transport": "tcp", "tcp_cc": "cubic", "tcp_ecn": "on"},
                    {"name": "mlt", "transport": "mlt"},
                    {"name": "gradlane"},
                    {"name": "no-prio", "params": {"prioritize": False}},
                    {"name": "no-drop", "params": {"selective_drop": False}},
                    {"name": "no-spray", "params": {"spray": False}}]}
    return configs.from_dict(raw, "t.yaml")


@pytest.mark.parametrize("features", [
    {"prioritize": True, "selective_drop": True, "spray": False},
    {"prioritize": False, "selective_drop": True, "spray": True},
    {"prioritize": True, "selective_drop": False, "spray": True},
])
def test_job_policy_copies_the_rules_to_the_job_with_its_switches(features):
    doc = job_policy(POLICY, 7, **features)
    policy = parse_policy(doc)
    job = policy.job(7)
    assert job is not None and [j.job_id for j in policy.jobs] == [7]
    assert (job.features.prioritize, job.features.selective_drop, job.features.spray) == \
        (features["prioritize"], features["selective_drop"], features["spray"])
    with open(POLICY) as f:
        original = yaml.safe_load(f)
    assert len(job.rules) == len(original["jobs"][0]["layers"])
    assert doc["defaults"] == original["defaults"]


def test_bottleneck_ports_are_leaf_l1s_two_uplinks():
    topo = build_topology("leafspine", TopoParams(workers=5, background=2))
    ports = dlcp.bottleneck_ports(topo)
    assert [(sw, peer) for sw, _, peer in ports] == [("l1", "sp1"), ("l1", "sp2")]
    assert {topo.ports("l1")[port] for _, port, _ in ports} == {"sp1", "sp2"}


def test_evidence_reads_queues_paths_and_selective_drops_of_the_job():
    ports = [("l1", 6, "sp1"), ("l1", 7, "sp2")]
    delta = {
        "l1.queues[port=6,prio=0].tx": 100.0, "l1.queues[port=6,prio=6].tx": 300.0,
        "l1.queues[port=6,prio=7].tx": 40.0, "l1.queues[port=7,prio=0].tx": 80.0,
        "l1.queues[port=7,prio=6].tx": 150.0,
        "sp1.classes[job=3,slot=0].push.seen": 300.0, "sp2.classes[job=3,slot=0].push.seen": 150.0,
        "sp2.classes[job=2,slot=1].push.seen": 999.0,            # another job: not counted
        "l1.classes[job=3,slot=0].push.seen": 460.0, "l1.classes[job=3,slot=0].dropped": 5.0,
        "l1.classes[job=3,slot=0].push.dropped": 5.0,
    }
    ev = dlcp.evidence(delta, ports, 3, 10.0)
    assert ev["push_per_path"] == {"sp1": 300.0, "sp2": 150.0}
    assert ev["busier_path_share"] == pytest.approx(2 / 3)
    assert ev["priority_queue_pkts"] == 450.0          # queues 1-6 only: not 0 (default), not 7 (control)
    assert ev["default_queue_pps"] == pytest.approx(18.0)
    assert ev["selective_drops"] == 5.0 and ev["job_push_seen"] == 910.0
    assert ev["bottleneck_tx_by_queue"]["l1:7"] == {0: 80.0, 6: 150.0}


def _run(arm, rep, tta, acc, **metrics):
    return {"arm": arm, "rep": rep, "ok": True, "error": None, "elapsed_s": 1.0,
            "metrics": {"time_to_target_s": tta, "final_accuracy": acc, **metrics},
            "switch": {"queue_tail_drops": {"l1": 10}}, "background_pps_total": 900.0,
            "conditions": {"load1_end": 1.0, "switch_rx_drops_total": 0, "switch_cpu_pct_max": 20.0,
                           "switch_dropped": False}}


def _rounds(n, dt):
    return [{"round": i, "t_s": (i + 1) * dt, "round_time_s": dt, "delivered": [1.0], "violations": 0,
             "queue_depth": None, "accuracy": 0.5 + 0.05 * i} for i in range(n)]


@pytest.mark.slow
def test_summary_speedups_per_mechanism_and_plots(tmp_path):
    rd = ResultsDir.create(tmp_path, "dlcp_ablation")
    times = {"tcp": 20.0, "mlt": 10.0, "gradlane": 5.0, "no-prio": 8.0, "no-drop": 5.0, "no-spray": 6.0}
    for rep in range(2):
        for arm, t in times.items():
            rd.append_run(_run(arm, rep, t, 0.9, busier_path_share=0.5, selective_drops=3.0,
                               priority_queue_pkts=100.0), _rounds(8, t / 8))
    results, cfg = rd.load(), _config()
    baselines, full, without = dlcp.roles(results, cfg)
    assert baselines == ["tcp", "mlt"] and full == "gradlane"
    assert without == {"prioritize": "no-prio", "selective_drop": "no-drop", "spray": "no-spray"}
    assert dlcp.best_baseline(results, baselines) == "mlt"
    summary = dlcp.summarize(results, cfg)
    rows = {r.key: r for r in summary.rows}
    assert [r.key for r in summary.rows] == [f.key for f in dlcp.FIGURES]
    assert rows["speedup_vs_best"].ours.mean == pytest.approx(100.0)       # 10 s / 5 s - 1
    assert rows["loss_without_priority"].ours.mean == pytest.approx(60.0)  # 8 s / 5 s - 1
    assert rows["loss_without_selective_drop"].ours.mean == pytest.approx(0.0)
    assert rows["loss_without_spray"].ours.mean == pytest.approx(20.0)
    assert rows["accuracy_delta"].ours.mean == pytest.approx(0.0)
    pngs = dlcp.plot(results, cfg, tmp_path)
    assert len(pngs) == 4 and all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)
    assert report.missing_rows(dlcp, summary) == []
    text = report.write_summary(dlcp, cfg, results, summary, pngs, tmp_path / "summary.md").read_text()
    assert "up to +84.3%" in text and "speedup_by_mechanism.png" in text


def test_a_run_that_misses_the_target_is_left_out_of_the_speedup():
    rd_runs = [_run("mlt", 0, 10.0, 0.9), _run("gradlane", 0, None, 0.8),
               _run("mlt", 1, 10.0, 0.9), _run("gradlane", 1, 4.0, 0.9)]
    results = Results(runs=rd_runs, rounds=[])
    assert dlcp.speedups(results, "gradlane", "mlt") == [pytest.approx(150.0)]
