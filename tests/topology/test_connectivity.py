"""Every host reaches every other host through the P4 switches the controller programmed."""
import pytest


@pytest.mark.parametrize("topo_name", ["incast", "leafspine"])
def test_pingall(network, topo_name):
    session = network(topo_name, workers=2, background=1)
    net = session.net
    loss = net.pingAll(timeout="2")
    if loss:  # first pings may race ARP on a cold switch; a second full round must be clean
        loss = net.pingAll(timeout="2")
    assert loss == 0
    for name, desc in session.topo.hosts.items():
        host = net.get(name)
        assert host.offloads_off(), f"{name}: checksum offloads still on"
        neigh = host.cmd(f"ip neigh show {desc.gateway}")
        assert session.topo.switches[desc.switch].router_mac in neigh.lower(), \
            f"{name}: gateway {desc.gateway} not resolved to the switch's router MAC ({neigh.strip()})"
        assert "default via " + desc.gateway in host.cmd("ip route show default")
        assert host.cmd("sysctl -n net.ipv6.conf.all.disable_ipv6").strip() == "1"
