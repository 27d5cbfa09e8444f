"""The soak's figures from synthetic samples: least-squares slopes, the per-process RSS verdict
against its 5% bar, the bounded-count check, the rounds-per-minute series, summary.md and the
plots; the incremental round counter and the /proc readers (no network)."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from topo import proc_stats
from topo.soak import RoundCounter, main
from topo import soak_report
from topo.soak_report import (Series, build_series, bounded_check, checks, failures, least_squares, plot_all,
                              relative_to_warm, render_markdown, rss_check, trend)

MIN = 60.0


def _samples(n: int = 11, rss_growth_per_min: float = 0.0, fds_growth_per_min: float = 0.0,
             restart_at: int | None = None, early_rss: float = 0.0) -> list[dict]:
    """A soak sampled once a minute: a switch, the controller and a PS; the PS's RSS grows by
    ``rss_growth_per_min`` KiB a minute; during the first two minutes it is ``early_rss`` higher
    (warm-up noise)."""
    out = []
    for k in range(n):
        ps_rss = 100_000 + rss_growth_per_min * k + (early_rss if k < 2 else 0.0)
        out.append({
            "t": 1_000_000 + k * MIN, "elapsed_s": k * MIN, "load": [1.0 + k / 10, 1.0, 1.0],
            "procs": {"s1 (switch)": {"pid": 10, "rss_kib": 50_000, "fds": 30, "threads": 8},
                      "controller (controller)": {"pid": 11, "rss_kib": 80_000, "fds": 40 + fds_growth_per_min * k,
                                                  "threads": 12},
                      "ps@h1 (agent)": {"pid": 12 if restart_at is None or k < restart_at else 99,
                                        "rss_kib": ps_rss, "fds": 20, "threads": 4}},
            "switches": {"s1": 49},
            "controller": {"state_file_bytes": 1354, "tcp_established": 2, "jobs_view_bytes": 800},
            "logs": {"controller.log": 1000 + 500 * k, "job1.ps.log": 2000 + 4000 * k},
            "rounds": {"1": 100 * k, "2": 90 * k}})
    return out


def _series(samples: list[dict], group: str, name: str, metric: str) -> Series:
    return next(s for s in build_series(samples) if (s.group, s.name, s.metric) == (group, name, metric))


def test_least_squares_recovers_a_line_and_refuses_one_point():
    assert least_squares([(0, 1), (1, 3), (2, 5)]) == pytest.approx((2.0, 1.0))
    assert least_squares([(0, 1)]) is None
    assert least_squares([(3, 1), (3, 2)]) is None


def test_trend_slope_is_per_hour_and_leaves_warm_up_out():
    s = Series("process", "p", "RSS", "MiB", [(0, 500.0), (60, 100.0), (120, 101.0), (180, 102.0)])
    t = trend(s, warm_up_s=60)
    assert t.points == 3 and t.start == 500 and t.warm == 100 and t.end == 102
    assert t.slope_per_h == pytest.approx(60.0)          # 1 MiB a minute
    assert t.fitted_change == pytest.approx(0.02)
    assert t.end_change == pytest.approx(0.02)


def test_flat_rss_passes_even_after_a_noisy_warm_up():
    samples = _samples(early_rss=50_000)                  # +50% during warm-up only
    check = rss_check(_series(samples, "process", "ps@h1 (agent)", "RSS"), warm_up_s=3 * MIN)
    assert check.ok is True and "+0.0%" in check.reason


def test_rss_growth_above_the_bar_fails_and_below_passes():
    grows = _samples(rss_growth_per_min=1000)             # +1% a minute: +8% over minutes 2..10
    check = rss_check(_series(grows, "process", "ps@h1 (agent)", "RSS"), warm_up_s=2 * MIN)
    assert check.ok is False and "ABOVE 5%" in check.reason
    slow = _samples(rss_growth_per_min=200)               # +1.6% over the same span
    assert rss_check(_series(slow, "process", "ps@h1 (agent)", "RSS"), warm_up_s=2 * MIN).ok is True


def test_a_restarted_process_fails_and_too_few_samples_say_so():
    restarted = _samples(restart_at=5)
    check = rss_check(_series(restarted, "process", "ps@h1 (agent)", "RSS"), warm_up_s=MIN)
    assert check.ok is False and "restarted" in check.reason
    short = _samples(n=3)
    check = rss_check(_series(short, "process", "ps@h1 (agent)", "RSS"), warm_up_s=2 * MIN)
    assert check.ok is None and "too few" in check.reason


def test_a_process_gone_before_the_end_fails():
    samples = _samples()
    for smp in samples[6:]:
        del smp["procs"]["ps@h1 (agent)"]
    fails = failures(build_series(samples), 2 * MIN, ended_early=[])
    assert fails == ["RSS of ps@h1 (agent): gone after +5.0 min"]


def test_growing_fds_fail_the_bounded_check_flat_ones_pass():
    leak = _samples(fds_growth_per_min=1)                 # 40 -> 50 fds
    assert bounded_check(_series(leak, "process", "controller (controller)", "open fds"), MIN).ok is False
    flat = _samples()
    assert bounded_check(_series(flat, "switch", "s1", "table entries"), MIN).ok is True


def test_rounds_per_minute_are_derived_from_cumulative_rounds():
    rate = _series(_samples(), "job", "job 2", "rounds per minute")
    assert rate.points[0] == (MIN, 90.0) and len(rate.points) == 10


def test_failures_name_each_cause_and_logs_are_not_checked():
    samples = _samples(rss_growth_per_min=1000, fds_growth_per_min=1)
    fails = failures(build_series(samples), 2 * MIN, ended_early=[2])
    assert fails[0] == "job 2 ended early"
    assert any(f.startswith("RSS of ps@h1 (agent)") for f in fails)
    assert any(f.startswith("open fds of controller (controller)") for f in fails)
    assert not any("log" in f for f in fails)
    assert failures(build_series(_samples()), 2 * MIN, ended_early=[]) == []


def _meta(**kw: object) -> dict:
    meta = {"command": "python -m topo.soak --minutes 10", "minutes": 10, "interval_s": 60, "warm_up_s": 120,
            "started": "2026-11-28 13:00:00 UTC", "cpus": 2, "load_start": [1.0, 1.0, 1.0],
            "load_end": [2.0, 1.5, 1.0], "ended_early": [], "config": {"seed": "1"}, "plots": ["processes.png"]}
    meta.update(kw)
    return meta


def test_summary_of_a_passing_soak():
    text = render_markdown(_samples(), _meta())
    assert "`python -m topo.soak --minutes 10`" in text and "**PASS**" in text
    assert "1.00, 1.00, 1.00 at the start, 2.00, 1.50, 1.00 at the end" in text
    assert "3 of 3 processes within the RSS bar" in text
    assert "| table entries of s1 | 49 entries | 49 entries | 49 entries | +0 entries/h | ok" in text
    assert "| rounds per minute of job 1 |" in text and "![processes.png](processes.png)" in text
    assert "- seed: 1" in text


def test_summary_of_a_failing_soak_says_why():
    text = render_markdown(_samples(rss_growth_per_min=1000), _meta(ended_early=[1]))
    assert "**FAIL**: job 1 ended early; RSS of ps@h1 (agent)" in text
    assert "2 of 3 processes within the RSS bar" in text
    row = next(line for line in text.splitlines() if line.startswith("| ps@h1 (agent)"))
    assert "**FAIL**" in row and "+58.6 MiB/h" in row    # 1000 KiB a minute


def test_plots_are_written(tmp_path: Path):
    written = plot_all(_samples(), tmp_path, warm_up_s=2 * MIN)
    assert [p.name for p in written] == ["processes.png", "switches_controller.png", "logs.png", "rounds.png"]
    assert all(p.stat().st_size > 1000 for p in written)


def test_rss_relative_to_warm_up_is_a_percentage():
    s = Series("process", "p", "RSS", "MiB", [(0, 10.0), (60, 100.0), (120, 103.0)])
    assert relative_to_warm(s, 60).points == [(60, 0.0), (120, pytest.approx(3.0))]


def test_report_is_written_and_written_again_from_its_folder(tmp_path: Path, capsys):
    samples = _samples(rss_growth_per_min=1000)
    fails = soak_report.write_report(samples, _meta(), tmp_path)
    assert fails and fails[0].startswith("RSS of ps@h1 (agent)")
    first = (tmp_path / "summary.md").read_text()
    (tmp_path / "samples.jsonl").write_text("".join(json.dumps(smp) + "\n" for smp in samples))
    (tmp_path / "summary.md").unlink()
    assert soak_report.main([str(tmp_path)]) == 1
    assert (tmp_path / "summary.md").read_text() == first
    assert capsys.readouterr().out.startswith("soak: FAIL: RSS of ps@h1 (agent)")
    assert soak_report.main([str(tmp_path / "nothing")]) == 2
    assert capsys.readouterr().err.startswith("topo.soak_report: error:")


def test_round_counter_reads_only_what_was_appended(tmp_path: Path):
    log = tmp_path / "job1.ps.log"
    counter = RoundCounter(log)
    assert counter.read() == 0                            # not there yet
    log.write_text('starting\n{"event": "round", "round": 0}\n{"event": "round", "rou')
    assert counter.read() == 1                            # the half-written line waits
    with open(log, "a") as f:
        f.write('nd": 1}\n{"event": "epoch", "round": 7}\n')
    assert counter.read() == 2


def test_proc_readers_on_this_process():
    pid = os.getpid()
    assert proc_stats.rss_kib(pid) > 0 and proc_stats.threads(pid) >= 1 and proc_stats.open_fds(pid) >= 3
    assert proc_stats.tcp_established(pid) == 0
    gone = 2 ** 22 + 1
    assert proc_stats.rss_kib(gone) is None and proc_stats.open_fds(gone) is None
    assert proc_stats.tcp_established(gone) is None


def test_established_inodes_reads_the_state_column():
    table = ("  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
             "   0: 0100007F:C350 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 111 1\n"
             "   1: 0100007F:9C40 0100007F:C350 01 00000000:00000000 00:00000000 00000000     0        0 222 1\n")
    assert proc_stats.established_inodes(table) == {"222"}


@pytest.mark.parametrize("args", [["--minutes", "0"], ["--interval", "-1"], ["--minutes", "1", "--interval", "90"],
                                  ["--flows", "0"]])
def test_bad_arguments_are_one_line_errors(args, capsys):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("topo.soak: error:") and err.count("\n") == 1


def _capped(samples: list[dict], adaptations: list[int], cap: int = 100) -> list[dict]:
    """The samples with a state file that grows in steps as its capped change log fills."""
    for smp, kept in zip(samples, adaptations):
        smp["controller"]["state_file_bytes"] = 1354 + 200 * kept
        smp["controller"]["capped"] = {"state file: PCN changes kept": [kept, cap],
                                       "`gradctl jobs` view: reports kept per job": [32, 32]}
    return samples


def test_a_capped_size_is_bounded_while_its_counts_stay_under_their_caps():
    steps = [0, 0, 0, 2, 2, 10, 10, 21, 21, 21, 21]
    _, bounded = checks(build_series(_capped(_samples(), steps)), warm_up_s=120)
    by_label = {c.label: c for c in bounded}
    state = by_label["state file of controller"]
    assert state.ok and "GROWS" in state.reason and "by the fitted rule; bounded" in state.reason
    kept = by_label["state file: PCN changes kept of controller"]
    assert kept.ok and kept.reason == "at most 21 of its cap 100 (bounded)"
    assert failures(build_series(_capped(_samples(), steps)), 120, []) == []


def test_a_count_above_its_cap_fails_and_a_size_without_counts_keeps_the_fitted_verdict():
    over = _capped(_samples(), [0, 0, 0, 40, 40, 80, 80, 101, 101, 101, 101])
    fails = failures(build_series(over), 120, [])
    assert "state file: PCN changes kept of controller: at most 101 of its cap 100 (ABOVE its cap)" in fails
    assert any(f.startswith("state file of controller: fitted") for f in fails)
    bare = _samples()
    for k, smp in enumerate(bare):       # the published run: bytes only, no counts sampled
        smp["controller"]["state_file_bytes"] = 1354 + 300 * k
    assert any(f.startswith("state file of controller: fitted") and f.endswith("(GROWS)")
               for f in failures(build_series(bare), 120, []))


def test_capped_counts_read_the_state_file_and_the_jobs_view(tmp_path: Path):
    from topo.soak import capped_counts
    state = tmp_path / "incast.controller.json"
    state.write_text(json.dumps({"adaptations": [{}] * 21,
                                 "epochs": {"1": {"epoch": 3, "history": [{}] * 2}, "2": {"epoch": 1}}}))
    got = capped_counts(state, [{"job": 1, "rounds": [{}] * 32}, {"job": 2, "rounds": [{}] * 7}])
    assert got == {"state file: PCN changes kept": [21, 100], "state file: epoch changes kept per job": [2, 64],
                   "`gradctl jobs` view: reports kept per job": [32, 32]}
    assert capped_counts(tmp_path / "missing.json", None) == {}
