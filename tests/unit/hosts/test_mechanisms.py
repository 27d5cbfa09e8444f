"""The papers' mechanisms as named: the software-MLT baseline, the TCP baseline's congestion
control / ECN / pacing, adaptive early close, reliable pull, CRITICAL marking, bound violations.

On the wire (real sockets, TOS as received): tests/integration/hosts/test_mechanisms_wire.py."""
import argparse

import pytest

from hosts.errors import ConfigError
from hosts.exchange import tcp_options
from hosts.exchange.config import add_transport_arguments, config_from_args
from hosts.transport.deadline import Deadline, DeadlineSettings

JOB = 4


def _config(*argv, layers=2):
    ap = argparse.ArgumentParser()
    add_transport_arguments(ap)
    return config_from_args(ap.parse_args(list(argv)), layers, seed=1)


def test_mlt_is_one_fixed_bound_for_push_and_pull_with_no_network_help():
    cfg = _config("--transport", "mlt", "--bound", "0.08", layers=3)
    assert cfg.bounds.push == cfg.bounds.pull == (0.08, 0.08, 0.08)   # no quarter-bound pull
    assert cfg.plain and not cfg.send.priority_hints
    assert cfg.push_deadline.mode == "fixed"
    ltp = _config("--bound", "0.08", layers=3)
    assert ltp.bounds.pull == pytest.approx((0.02,) * 3) and not ltp.plain
    assert ltp.push_deadline.mode == "telemetry"


@pytest.mark.parametrize("flags, needle", [
    (["--pull-bound", "0.01"], "--pull-bound"),
    (["--layer-bounds", "0.1,0.1"], "--layer-bounds"),
    (["--phase-aware"], "--phase-aware"),
    (["--reliable-pull"], "--reliable-pull"),
    (["--deadline", "adaptive"], "--deadline adaptive"),
    (["--deadline", "telemetry"], "--deadline telemetry"),
])
def test_mlt_refuses_what_the_baseline_does_not_have(flags, needle):
    with pytest.raises(ConfigError, match="one fixed bound for push and pull") as info:
        _config("--transport", "mlt", *flags)
    assert needle in str(info.value)


def test_mlt_help_says_exactly_what_it_is():
    ap = argparse.ArgumentParser()
    add_transport_arguments(ap)
    text = " ".join(ap.format_help().split())
    assert "software-MLT baseline of the DBLP paper" in text
    assert "ONE fixed --bound for push and pull alike, no per-layer bounds, no phases" in text
    assert "PLAIN flag" in text


def test_tcp_cc_must_be_offered_by_the_kernel_and_needs_tcp():
    have = tcp_options.available_congestion_controls()
    assert have, "this kernel lists its congestion controls"
    with pytest.raises(ConfigError) as info:
        _config("--transport", "tcp", "--tcp-cc", "no-such-cc")
    assert f"offers {' '.join(have)}" in str(info.value)
    with pytest.raises(ConfigError, match="need --transport tcp"):
        _config("--tcp-cc", have[0])
    with pytest.raises(ConfigError, match="need --transport tcp"):
        _config("--transport", "mlt", "--tcp-ecn", "on")
    assert _config("--transport", "tcp", "--tcp-cc", have[0]).tcp_cc == have[0]


def test_tcp_ecn_is_checked_never_changed():
    current = open(tcp_options.TCP_ECN).read().strip()
    fits_on = current == "1"
    with pytest.raises(ConfigError, match="set it to .* there first"):
        tcp_options.check_ecn(not fits_on)
    assert open(tcp_options.TCP_ECN).read().strip() == current
    assert tcp_options.check_ecn(None) == f"net.ipv4.tcp_ecn={current}"


def test_adaptive_deadline_follows_the_smoothed_transfer_time():
    d = Deadline(DeadlineSettings("adaptive", initial=0.5, floor=0.02, ceiling=2.0, multiple=3.0))
    assert d.current() == 0.5                       # before any sample: the start value
    d.observe(0.1)
    assert d.current() == pytest.approx(0.3)        # 3 x S, S = first sample
    d.observe(0.9)
    assert d.current() == pytest.approx(3 * (0.1 + 0.8 / 8))   # EWMA gain 1/8
    for _ in range(60):
        d.observe(0.001)
    assert d.current() == 0.02                      # floor
    for _ in range(60):
        d.observe(5.0)
    assert d.current() == 2.0                       # ceiling
    fixed = Deadline(DeadlineSettings("fixed", initial=0.5))
    fixed.observe(0.01)
    assert fixed.current() == 0.5
    with pytest.raises(ConfigError, match="--deadline-floor-ms"):
        _config("--deadline-floor-ms", "500", "--deadline-ceiling-ms", "100")


def test_reliable_pull_has_no_bound_and_no_deadline():
    cfg = _config("--reliable-pull", "--bound", "0.1")
    assert cfg.bounds.pull == (0.0, 0.0) and cfg.bounds.push == (0.1, 0.1)
    assert cfg.pull_deadline.initial == float("inf") and cfg.push_deadline.initial == 0.5
    assert cfg.bounds.critical_layers(pull=True) == {0, 1}
    with pytest.raises(ConfigError, match="drop --pull-bound"):
        _config("--reliable-pull", "--pull-bound", "0.01")


def test_phase_flags():
    cfg = _config("--phase-aware", "--phase-check-rounds", "5", "--phase-per-layer")
    assert cfg.phase_check_rounds == 5 and cfg.phase_per_layer
    assert _config("--phase-aware").phase_check_rounds == 10
    with pytest.raises(ConfigError, match="--phase-check-rounds 0"):
        _config("--phase-aware", "--phase-check-rounds", "0")
    with pytest.raises(ConfigError, match="needs --phase-aware"):
        _config("--phase-per-layer")
