"""The built-in topologies follow the address plan and have the shapes the features need."""
import pytest

from topo.errors import DescriptionError
from topo.topologies import TOPOLOGIES, TopoParams, build_topology


@pytest.mark.parametrize("name", sorted(TOPOLOGIES))
def test_address_plan(name):
    topo = build_topology(name)
    for host in topo.hosts.values():
        dev = topo.switches[host.switch].device_id
        assert host.ip.startswith(f"10.0.{dev}.") and host.gateway == f"10.0.{dev}.254"
        assert topo.ports(host.switch)[host.switch_port] in topo.hosts
    assert len(topo.hosts_with_role("ps")) == 1


def test_incast_shares_one_bottleneck_port():
    topo = build_topology("incast", TopoParams(workers=5, background=3, bottleneck_pps=500))
    assert len(topo.hosts_with_role("worker")) == 5
    assert all(topo.hosts[h].switch == "s1" for h in topo.hosts_with_role("worker"))
    assert topo.hosts["ps"].switch == "s2"
    limited = [link for link in topo.links if link.a_queue_rate_pps or link.b_queue_rate_pps]
    assert len(limited) == 1 and (limited[0].a, limited[0].b) == ("s1", "s2")
    assert limited[0].a_queue_rate_pps == 500


def test_a_bottleneck_in_bytes_replaces_the_packet_rate():
    topo = build_topology("incast", TopoParams(workers=2, background=0, bottleneck_bytes=4.5e5))
    shaped = [link for link in topo.links if link.a_byte_rate or link.b_byte_rate]
    assert len(shaped) == 1 and (shaped[0].a, shaped[0].b) == ("s1", "s2")
    assert shaped[0].a_byte_rate == 4.5e5 and shaped[0].a_queue_rate_pps is None
    assert not any(link.a_queue_rate_pps or link.b_queue_rate_pps for link in topo.links)


def test_leafspine_has_two_equal_cost_paths():
    topo = build_topology("leafspine")
    for leaf in ("l1", "l2"):
        assert sorted(p for p in topo.ports(leaf).values() if p.startswith("sp")) == ["sp1", "sp2"]
    assert {topo.hosts[w].switch for w in topo.hosts_with_role("worker")} == {"l1", "l2"}
    assert topo.hosts["ps"].switch == "l2"


def test_pcn_tree_matches_paper_setting():
    topo = build_topology("pcn")
    assert set(topo.switches) == {"r1", "l1", "l2"}
    for leaf in ("l1", "l2"):
        background = [h for h in topo.hosts_with_role("background") if topo.hosts[h].switch == leaf]
        assert len(background) == 3
    assert all(sw.queue_depth == 60 for sw in topo.switches.values())


def test_unknown_and_bad_params():
    with pytest.raises(DescriptionError, match="unknown topology 'ring'"):
        build_topology("ring")
    with pytest.raises(DescriptionError, match="at least 1 worker"):
        build_topology("incast", TopoParams(workers=0))


def test_params_the_description_contract_rejects_are_a_topo_error():
    with pytest.raises(DescriptionError, match=r"topology 'incast': links\[\d+\]\.a_queue_rate_pps: 0 is not a rate > 0"):
        build_topology("incast", TopoParams(bottleneck_pps=0))
    with pytest.raises(DescriptionError, match=r"topology 'incast': links\[\d+\]\.loss_pct: 200 is not in 0\.\.100"):
        build_topology("incast", TopoParams(loss_pct=200))


def test_incast_with_two_host_groups_shares_the_bottleneck():
    from topo.training import host_group, host_groups

    topo = build_topology("incast", TopoParams(workers=2, background=1, jobs=2))
    assert host_groups(topo) == 2
    assert host_group(topo, 0) == ("ps", ["w1", "w2"])
    assert host_group(topo, 1) == ("ps2", ["w3", "w4"])
    assert {topo.hosts[h].switch for h in ("w1", "w4")} == {"s1"}
    assert {topo.hosts[h].switch for h in ("ps", "ps2")} == {"s2"}
    assert [link for link in topo.links if link.a == "s1" and link.b == "s2"]  # one trunk
    single = build_topology("incast", TopoParams(workers=3))
    assert host_groups(single) == 1 and host_group(single, 0) == ("ps", ["w1", "w2", "w3"])
    with pytest.raises(DescriptionError, match="incast topology only"):
        build_topology("pcn", TopoParams(jobs=2))
    with pytest.raises(DescriptionError, match="1..8 host groups"):
        build_topology("incast", TopoParams(jobs=0))
