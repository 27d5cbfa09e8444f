"""Where run-time loss bursts go (the bottleneck's switch ends) and the spec each end gets."""
from __future__ import annotations

import pytest

from topo.errors import RunError
from topo.link_bursts import bottleneck_ends, burst_spec
from topo.shaping import plan_impairments
from topo.topologies import TopoParams, build_topology


def test_incast_bursts_both_ends_or_only_the_rated_egress():
    topo = build_topology("incast", TopoParams(workers=3, background=0))
    both = {(e.switch, e.port) for e in bottleneck_ends(topo)}
    rated = [(e.switch, e.port) for e in bottleneck_ends(topo, rated_only=True)]
    trunk = topo.links[-1]
    assert both == {("s1", trunk.a_port), ("s2", trunk.b_port)}
    assert rated == [("s1", trunk.a_port)]  # s1 -> s2 carries the workers' pushes to the PS


def test_leafspine_bursts_every_rated_uplink():
    topo = build_topology("leafspine", TopoParams(workers=4))
    rated = {(e.switch, e.port) for e in bottleneck_ends(topo, rated_only=True)}
    assert {s for s, _ in rated} == {"l1"} and len(rated) == 2


def test_a_switch_made_impairment_is_kept_under_the_burst_and_a_netem_one_is_not_doubled():
    params = TopoParams(workers=2, background=0, delay_ms=2, loss_pct=1)
    switch_made = build_topology("incast", params)
    plan_impairments(switch_made, netem=False, switch_kind="embedded")
    assert {e.base_spec for e in bottleneck_ends(switch_made)} == {"delay=2ms,loss=0.01"}
    netem_made = build_topology("incast", params)
    plan_impairments(netem_made, netem=True, switch_kind="embedded")
    assert {e.base_spec for e in bottleneck_ends(netem_made)} == {""}


def test_burst_spec_appends_a_burst_starting_now():
    assert burst_spec("", 0.25, 0.7) == "burst=0s+250.0ms@0.7"
    assert burst_spec("delay=2ms", 0.1315, 0.8) == "delay=2ms,burst=0s+131.5ms@0.8"


@pytest.mark.parametrize("duration, loss", [(0.0, 0.5), (float("inf"), 0.5), (float("nan"), 0.5),
                                            (0.1, -0.1), (0.1, 1.5), (0.1, float("nan"))])
def test_burst_spec_refuses_what_the_switch_would_refuse(duration, loss):
    with pytest.raises(RunError):
        burst_spec("", duration, loss)
