"""Cross-validation of a simulated run against the emulation (experiments.crossval): both sides'
figures from records, the ratio, the 15 % verdict, and each miss's cause measured in the records.
The records are small, fabricated in the shape the emulation and the simulator write them, with
figures near the published incast and PCN runs."""
from __future__ import annotations

import json
from dataclasses import replace

import pytest

from experiments import config as configs
from experiments import crossval, report
from experiments.records import Results, ResultsDir


def _round(arm, rnd, t, depth=None, **parts):
    rec = {"arm": arm, "rep": 0, "round": rnd, "round_time_s": t, "queue_depth": depth}
    if parts:
        rec["worker_breakdown"] = {"compute_s": 0.0, **parts}
    return rec


def _run(arm, tail_drops, **metrics):
    return {"arm": arm, "rep": 0, "ok": True, "metrics": metrics,
            "switch": {"queue_tail_drops": {"s1": tail_drops, "s2": 0}}}


def _emulation() -> Results:
    """gradlane at 0.2 s rounds (push 120, wait 30, pull 45, compute 0.5 ms; its pushes met a full
    64-packet queue in 4 of 5 rounds), TCP cubic at 0.23 s with a 17 ms pull."""
    depths = [63, 63, 63, 54, 63]
    g = [_round("gradlane", i, 0.2, depths[i], compute_s=0.0005, push_s=0.12, wait_s=0.03, pull_s=0.045)
         for i in range(5)]
    c = [_round("tcp-cubic", i, 0.23, None, compute_s=0.0004, push_s=0.0005, wait_s=0.21, pull_s=0.017)
         for i in range(5)]
    return Results(runs=[_run("gradlane", 40), _run("tcp-cubic", 2267)], rounds=g + c)


def _simulated() -> Results:
    """ns-3: gradlane at 0.12 s (push 110, wait 9, pull 0.6 ms, one push at a full queue), cubic
    at 0.2 s whose pull stage (no worker split in ns-3's TCP) is 0.5 ms."""
    depths = [52, 50, 63, 52, 52]
    g = [_round("gradlane", i, 0.12, depths[i], push_s=0.11, wait_s=0.009, pull_s=0.0006) for i in range(5)]
    c = [{**_round("tcp-cubic", i, 0.2), "push_stage_s": 0.1995, "pull_stage_s": 0.0005} for i in range(5)]
    return Results(runs=[_run("gradlane", 46), _run("tcp-cubic", 2000)], rounds=g + c)


@pytest.fixture()
def configs_pair(tmp_path):
    emu_cfg = configs.load(configs.default_path("ltp_incast"))
    ref = crossval.write_reference(_emulation(), emu_cfg, tmp_path)
    sim_cfg = replace(emu_cfg, params={**emu_cfg.params, "backend": "ns3", "xval_reference": str(ref),
                                       "sim_host_rx_us": 15.2, "sim_host_tx_us": 17.9})
    return emu_cfg, sim_cfg, ref


def test_ratios_verdicts_and_measured_causes(configs_pair):
    _, sim_cfg, _ = configs_pair
    section = crossval.section(_simulated(), sim_cfg)
    assert section is not None
    by = {(c.arm, c.spec.key): c for c in section.comparisons}
    p50 = by[("gradlane", "round_p50_s")]
    assert (p50.sim, p50.emu) == (pytest.approx(0.12), pytest.approx(0.2))
    assert p50.ratio == pytest.approx(0.6) and p50.within is False
    # the gap of a mean round split into the parts both sides report, largest first
    assert p50.cause == ("mean round 120.0 vs 200.0 ms (ns-3 vs emulation), gap +80.0 ms: pull +44.4 "
                         "(0.6 vs 45.0), wait +21.0 (9.0 vs 30.0), push +10.0 (110.0 vs 120.0), rest "
                         "+4.1 (0.4 vs 4.5), compute +0.5 (0.0 vs 0.5)")
    push = by[("gradlane", "push_s")]
    assert push.ratio == pytest.approx(110 / 120) and push.within is True and push.cause == ""
    pull = by[("gradlane", "pull_s")]
    assert pull.ratio == pytest.approx(0.6 / 45) and pull.within is False
    assert pull.cause == "0 % of an ns-3 round vs 22 % of an emulated one"
    drops = by[("gradlane", "tail_drops")]
    assert drops.ratio == pytest.approx(1.15) and drops.within is True       # the edge is within
    queue = by[("gradlane", "queue_p50")]
    assert (queue.sim, queue.emu) == (52.0, 63.0) and queue.within is False
    assert queue.cause == "pushes that met a full queue: 20 % of ns-3's rounds vs 80 % of the emulation's"
    cubic_p50 = by[("tcp-cubic", "round_p50_s")]
    assert cubic_p50.ratio == pytest.approx(0.2 / 0.23) and cubic_p50.within is True
    # ns-3's TCP has no per-worker split: its parts are not compared, its pull stage stands for
    # the pull in the round's decomposition only
    assert by[("tcp-cubic", "push_s")].within is None and by[("tcp-cubic", "pull_s")].within is None
    cubic_p99 = by[("tcp-cubic", "round_p99_s")]
    assert cubic_p99.within is True and cubic_p99.cause == ""
    miss = crossval.ltp_cause("round_p50_s", crossval.ltp_figures(_simulated(), 64)["tcp-cubic"],
                              crossval.ltp_figures(_emulation(), 64)["tcp-cubic"])
    assert miss == ("mean round 200.0 vs 230.0 ms (ns-3 vs emulation), gap +30.0 ms: pull (ns-3: the "
                    "pull stage) +16.5 (0.5 vs 17.0), rest +13.5 (199.5 vs 213.0)")
    assert by[("tcp-cubic", "tail_drops")].ratio == pytest.approx(2000 / 2267)
    # the table: one row per figure, its verdict and cause; the note counts and names the model
    rows = {(r[0], r[1]): r for r in section.table.rows}
    assert rows[("gradlane", p50.spec.label)][2:6] == ["0.12", "0.2", "0.6", "no"]
    assert rows[("tcp-cubic", by[("tcp-cubic", "push_s")].spec.label)][4:6] == ["n/a", "n/a"]
    compared = [c for c in section.comparisons if c.within is not None]
    assert section.notes[0].startswith(f"Cross-validation: {sum(c.within for c in compared)} of {len(compared)} ")
    assert "15.2 us per received and 17.9 us per sent datagram" in section.notes[0]


def test_no_section_at_another_scale_or_without_a_reference(configs_pair, tmp_path):
    _, sim_cfg, _ = configs_pair
    paper = replace(sim_cfg, params={**sim_cfg.params, "sim_gradient_params": 25557032})
    assert crossval.section(_simulated(), paper) is None
    missing = replace(sim_cfg, params={**sim_cfg.params, "xval_reference": str(tmp_path / "none.json")})
    assert crossval.section(_simulated(), missing) is None


def test_pcn_burst_completion_miss_shows_the_later_bursts_against_the_first(tmp_path):
    cfg = configs.load(configs.default_path("pcn"))

    def results(first, later, start_queue, completion):
        bursts = [{"arm": "tcp-no-pcn", "rep": 0, "round": 100 + i,
                   "workers": [{"rank": k, "completion_s": first if i == 0 else later} for k in range(2)]}
                  for i in range(6)]
        run = {"arm": "tcp-no-pcn", "rep": 0, "ok": True,
               "metrics": {"start_queue_pkts": start_queue, "max_queue_in_burst_pkts": 47.0,
                           "burst_completion_s": completion, "queueing_delay_ms": 55.0,
                           "background_throughput_mbps": 10.2}}
        return Results(runs=[run], rounds=bursts)

    ref = crossval.write_reference(results(1.3, 2.5, 24.0, 2.3), cfg, tmp_path)
    sim_cfg = replace(cfg, params={**cfg.params, "backend": "ns3", "xval_reference": str(ref)})
    section = crossval.section(results(1.6, 1.25, 29.8, 1.3), sim_cfg)
    by = {c.spec.key: c for c in section.comparisons}
    assert by["start_queue_pkts"].ratio == pytest.approx(29.8 / 24.0) and by["start_queue_pkts"].within is False
    assert by["start_queue_pkts"].cause == "not measured in these records"
    assert by["max_queue_in_burst_pkts"].within is True and by["background_throughput_mbps"].ratio == 1.0
    done = by["burst_completion_s"]
    assert done.ratio == pytest.approx(1.3 / 2.3) and done.within is False
    assert done.cause == ("per worker and burst, ns-3 vs emulation: first burst 1.6 vs 1.3 s (1.23), "
                          "later bursts 1.25 vs 2.5 s (0.50)")
    saved = json.loads(ref.read_text())
    assert saved["experiment"] == "pcn" and saved["scale"]["topology"] == "pcn"


def test_the_reference_command_refuses_what_is_not_an_emulation_run(tmp_path, capsys):
    assert crossval.main([str(tmp_path)]) == 2
    assert "is not a results directory" in capsys.readouterr().err


def test_publish_carries_an_emulation_runs_reference(tmp_path):
    run = tmp_path / "results" / "ltp_incast" / "20261126-000000"
    run.mkdir(parents=True)
    rd = ResultsDir(run)
    rd.summary_path.write_text("# summary\n")
    cfg = configs.load(configs.default_path("ltp_incast"))
    crossval.write_reference(_emulation(), cfg, run)
    dest = report.publish("ltp_incast", rd, [], root=tmp_path / "docs")
    copied = json.loads((dest / crossval.REFERENCE).read_text())
    assert copied["source"] == "results/ltp_incast/20261126-000000"
    assert copied["arms"]["gradlane"]["round_p50_s"] == pytest.approx(0.2)


def test_publish_replaces_the_summary_and_plots_and_keeps_the_hand_written_pages(tmp_path):
    run = tmp_path / "results" / "ltp_incast" / "20261128-000000"
    run.mkdir(parents=True)
    rd = ResultsDir(run)
    rd.summary_path.write_text("# new summary\n")
    plot = run / "rounds_per_s.png"
    plot.write_bytes(b"\x89PNG new")
    dest = tmp_path / "docs" / "ltp_incast"
    dest.mkdir(parents=True)
    for name, text in (("README.md", "# reading"), ("summary-97ac500.md", "# old run"),
                       ("summary.md", "# old summary"), ("stale_plot.png", "old")):
        (dest / name).write_text(text)
    report.publish("ltp_incast", rd, [plot], root=tmp_path / "docs")
    assert (dest / "summary.md").read_text() == "# new summary\n"
    assert (dest / "README.md").read_text() == "# reading"
    assert (dest / "summary-97ac500.md").read_text() == "# old run"
    assert sorted(p.name for p in dest.glob("*.png")) == ["rounds_per_s.png"]
