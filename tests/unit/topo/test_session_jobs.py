"""A run's training jobs: transport and agent flags reach both sides; pacing is off unless asked,
and then applies to every transport alike (no oracle pacing for the loss-tolerant arms only)."""
import pytest

from topo.session import RunConfig, RunSession
from topo.topologies import TopoParams


def _session(**cfg):
    return RunSession(RunConfig(params=TopoParams(workers=3, bottleneck_pps=1000.0), **cfg))


def _value(argv, flag):
    return [argv[i + 1] for i, a in enumerate(argv) if a == flag]


@pytest.mark.parametrize("transport", ["ltp", "mlt", "tcp"])
def test_no_arm_is_paced_by_default(transport):
    job = _session(transport=transport).job_spec(1)
    assert "--pace-pps" not in job.extra_worker and "--pace-pps" not in job.extra_ps
    assert _value(job.extra_worker, "--transport") == _value(job.extra_ps, "--transport") == [transport]


@pytest.mark.parametrize("transport", ["ltp", "mlt", "tcp"])
def test_pace_applies_the_fair_share_to_every_arm(transport):
    session = _session(transport=transport, pace=True)
    job = session.job_spec(1, workers=2)
    assert session.pace_pps(2) == pytest.approx(450.0)             # 0.9 x 1000 / 2
    assert _value(job.extra_worker, "--pace-pps") == ["450"]
    assert "--pace-pps" not in job.extra_ps                        # the workers share the bottleneck


def test_agent_args_and_caller_extras_reach_the_agents_in_order():
    session = _session(transport="tcp", agent_args=("--tcp-cc", "reno"))
    job = session.job_spec(4, rounds=7, extra_worker=("--hole-fill", "zero"))
    assert job.job_id == 4 and job.rounds == 7 and job.workers == 3
    assert job.extra_ps == ("--transport", "tcp", "--tcp-cc", "reno")
    assert job.extra_worker == ("--transport", "tcp", "--tcp-cc", "reno", "--hole-fill", "zero")


def test_tcp_ecn_is_set_per_host_namespace_and_passed_to_the_agents():
    session = _session(transport="tcp", tcp_ecn="on")
    assert session.host_sysctls() == {"net.ipv4.tcp_ecn": "1"}
    assert _value(session.job_spec(1).extra_worker, "--tcp-ecn") == ["on"]
    assert _session(transport="tcp", tcp_ecn="off").host_sysctls() == {"net.ipv4.tcp_ecn": "0"}
    assert _session(transport="tcp").host_sysctls() == {}


def test_min_workers_reaches_the_parameter_server_only():
    job = _session(min_workers=2).job_spec(1)
    assert _value(job.extra_ps, "--min-workers") == ["2"] and "--min-workers" not in job.extra_worker
    assert "--min-workers" not in _session().job_spec(1).extra_ps
