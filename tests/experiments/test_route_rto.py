"""rto_min per route inside real Mininet host namespaces (what the regime map's tuned-RTO TCP arm
does before its jobs), and its restoration (a network test: root, under the network lock)."""
from __future__ import annotations

import os

import pytest

from experiments import route_rto


@pytest.fixture
def two_hosts():
    if os.geteuid() != 0:
        pytest.fail("needs root (Mininet)", pytrace=False)
    from mininet.net import Mininet

    net = Mininet(topo=None, build=False, controller=None, autoSetMacs=False, autoStaticArp=False,
                  waitConnected=False)
    try:
        h1 = net.addHost("rto1", ip="10.91.0.1/24")
        h2 = net.addHost("rto2", ip="10.91.0.2/24")
        net.addLink(h1, h2)
        net.build()
        h1.cmd("ip route add default via 10.91.0.2")
        yield h1, h2
    finally:
        net.stop()


def test_rto_min_is_set_on_every_route_and_restored(two_hosts):
    h1, h2 = two_hosts
    assert route_rto.rto_min_ms_of(h1) == [None, None]          # default route + the subnet
    route_rto.set_rto_min(h1, 7)
    assert route_rto.rto_min_ms_of(h1) == [7.0, 7.0]
    assert route_rto.rto_min_ms_of(h2) == [None]                 # another namespace: untouched
    assert "1 received" in h1.cmd("ping -c 1 -W 2 10.91.0.2")   # the routes still carry traffic
    route_rto.set_rto_min(h1, None)
    assert route_rto.rto_min_ms_of(h1) == [None, None]
