"""The worker trend of ltp_incast compares gradlane with the best of the same TCP variants at
every worker count, not with whatever TCP arm happened to run there; its per-arm table gives the
share of DATA resent per round."""
from __future__ import annotations

import pytest

from experiments import config as configs
from experiments import ltp_incast
from experiments.records import Results


def _cfg():
    arms = [{"name": "gradlane", "transport": "ltp"},
            {"name": "tcp-cubic", "transport": "tcp", "tcp_cc": "cubic", "tcp_ecn": "off"},
            {"name": "tcp-bbr", "transport": "tcp", "tcp_cc": "bbr", "tcp_ecn": "off"},
            {"name": "gradlane-w2", "transport": "ltp", "workers": 2, "params": {"sweep": True}},
            {"name": "tcp-cubic-w2", "transport": "tcp", "tcp_cc": "cubic", "tcp_ecn": "off", "workers": 2}]
    return configs.from_dict({"name": "ltp_incast", "topology": {"name": "incast", "workers": 8},
                              "arms": arms}, "t.yaml")


def _run(arm, rps):
    return {"arm": arm, "rep": 0, "ok": True, "metrics": {"rounds_per_s": rps}}


def test_trend_takes_tcp_variants_that_ran_at_every_worker_count():
    results = Results(runs=[_run("gradlane", 6.0), _run("tcp-cubic", 2.0), _run("tcp-bbr", 3.0),
                            _run("gradlane-w2", 8.0), _run("tcp-cubic-w2", 4.0)], rounds=[])
    trend = ltp_incast._trend(results, _cfg())
    # bbr ran at 8 workers only: at 8 the comparison is with cubic too, as at 2
    assert trend[8]["tcp"] == (2.0, "tcp-cubic") and trend[8]["gain"] == pytest.approx(3.0)
    assert trend[2]["tcp"] == (4.0, "tcp-cubic-w2") and trend[2]["gain"] == pytest.approx(2.0)
    assert trend[2]["tcp_families"] == [("cubic", "off")]


def test_the_shipped_config_runs_every_tcp_variant_at_every_worker_count():
    cfg = configs.load(configs.default_path("ltp_incast"))
    by_workers: dict[int, set] = {}
    for arm in cfg.arms:
        if arm.transport == "tcp":
            by_workers.setdefault(cfg.workers_of(arm), set()).add((arm.tcp_cc, arm.tcp_ecn))
    assert set(by_workers) == {2, 4, 8} and by_workers[2] == by_workers[4] == by_workers[8]
    # matched arms: gradlane and MLT push under one bound
    assert "0.1" in cfg.arm("gradlane").agent_args and "0.1" in cfg.arm("mlt").agent_args


def test_the_resent_share_is_per_round_and_only_where_both_counts_are_recorded():
    rounds = [{"retransmissions": 0, "data_packets": 1000},
              {"retransmissions": 36, "data_packets": 1000},
              {"retransmissions": 3, "data_packets": None}]       # not counted: no total
    assert ltp_incast._resent_share(rounds) == "1.8 % (max 3.6 %)"
    assert ltp_incast._resent_share([{"retransmissions": 5}, {"round": 1}]) == "n/a"


def _scaled(bottleneck_pps, backend=None):
    cfg = {"name": "ltp_incast", "topology": {"name": "incast", "workers": 8, "bottleneck_pps": bottleneck_pps,
                                              "queue_depth": 64},
           "arms": [{"name": "gradlane", "transport": "ltp"},
                    {"name": "tcp-cubic", "transport": "tcp", "tcp_cc": "cubic", "tcp_ecn": "off"}],
           "params": {"backend": backend} if backend else {}}
    results = Results(runs=[_run("gradlane", 6.0), _run("tcp-cubic", 2.0)], rounds=[])
    summary = ltp_incast.summarize(results, configs.from_dict(cfg, "t.yaml"))
    return next(r for r in summary.rows if r.key == "throughput_x").note, summary.notes


def test_the_summary_explains_the_emulations_scale_only_where_the_run_had_it():
    note, notes = _scaled(3000)
    assert "bottleneck scaled to 3000 packets/s: a full 64-packet queue is ~21 ms" in note
    assert any(n.startswith("Where gradlane's push time goes") for n in notes)
    # ns-3 at 10 Gb/s: no scaled bottleneck, and the emulation's push-time measurements do not apply
    note, notes = _scaled(None, backend="ns3")
    assert note == "best TCP: tcp-cubic"
    assert not any(n.startswith("Where gradlane's push time goes") for n in notes)
