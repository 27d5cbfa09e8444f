"""Who makes each link impairment: netem, the embedded switch's --impair, or nobody."""
from p4target.switch.links.impairments import parse_impairment
from topo.shaping import plan_impairments
from topo.topologies import TopoParams, build_topology


def test_no_impairment_requested_means_none_everywhere():
    topo = build_topology("incast")
    plan = plan_impairments(topo, netem=False, switch_kind="embedded")
    assert plan.switch_specs == {} and all(link.impairment == "none" for link in topo.links)


def test_switch_makes_delay_loss_bursts_without_netem_and_specs_parse():
    topo = build_topology("incast", TopoParams(delay_ms=2, loss_pct=1))
    plan = plan_impairments(topo, netem=False, switch_kind="embedded", bursts=("2s+200ms@0.7",))
    trunk = [link for link in topo.links if link.a == "s1" and link.b == "s2"][0]
    assert trunk.impairment == "switch"
    assert set(plan.switch_specs) == {"s1", "s2"}
    port, imp = parse_impairment(plan.switch_specs["s1"][0])
    assert port == trunk.a_port and imp.delay == 0.002 and imp.loss == 0.01
    assert imp.bursts[0].start == 2 and imp.bursts[0].loss == 0.7
    assert "switch egress" in plan.summary(topo)[0] and "loss bursts 2s+200ms@0.7" in plan.summary(topo)[0]


def test_netem_preferred_when_present_but_bursts_stay_in_switch():
    topo = build_topology("incast", TopoParams(delay_ms=2))
    plan = plan_impairments(topo, netem=True, switch_kind="embedded")
    assert plan.netem_links and plan.switch_specs == {}
    topo = build_topology("incast", TopoParams(delay_ms=2))
    plan = plan_impairments(topo, netem=True, switch_kind="embedded", bursts=("1s+100ms@0.6",))
    assert not plan.netem_links and plan.switch_specs


def test_real_switch_without_netem_records_none_and_says_so():
    topo = build_topology("incast", TopoParams(loss_pct=1))
    plan = plan_impairments(topo, netem=False, switch_kind="real")
    assert all(link.impairment == "none" for link in topo.links)
    assert plan.unmade == ("s1-s2",) and "NOT applied" in plan.summary(topo)[0]
