"""Every topology topo/ builds is one the controller can program: each switch routes to every host
over its shortest paths, leaf-spine uplinks become equal-cost groups."""
from __future__ import annotations

import pytest

from controller import p4names as N
from controller.entries import Group, TableEntry
from controller.network import plan_switch
from controller.topology import Topology
from topo import topologies


@pytest.mark.parametrize("name", sorted(topologies.TOPOLOGIES))
def test_topo_descriptions_are_programmable(name):
    desc = topologies.build_topology(name).to_dict()
    topo = Topology.from_dict(desc)
    for switch in topo.switches:
        plan = plan_switch(topo, switch)
        routes = [e for e in plan.entities if isinstance(e, TableEntry) and e.table == N.ROUTE_TABLE]
        assert len(routes) == len(topo.hosts), f"{switch} lacks routes"
        attached = [h for h in topo.hosts.values() if h.switch == switch]
        arp = [e for e in plan.entities if isinstance(e, TableEntry) and e.table == N.ARP_TABLE]
        assert len(arp) >= len({h.gateway for h in attached})
    if name == "leafspine":
        leaf = next(h.switch for h in topo.hosts.values())
        groups = [e for e in plan_switch(topo, leaf).entities if isinstance(e, Group)]
        assert groups and all(len(g.members) >= 2 for g in groups)
