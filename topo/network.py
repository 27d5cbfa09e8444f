"""Build a Mininet network from a topology description and bring its P4 switches up.

The switch ends of every link live in the root namespace (`<switch>-eth<port>`); they are
recorded before they are created so `topo.stop` can delete them after a crash.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mininet.link import Link, TCLink
from mininet.net import Mininet

from controller.topology import Topology
from topo.errors import SwitchStartError, TopoError
from topo.host_node import GradHost
from topo.pidfile import RunRecord
from topo.shaping import ImpairmentPlan, plan_impairments, probe_qdiscs
from topo.switch_node import P4Switch, ensure_exists
from topo.toolchain import Tool, switch_tool


@dataclass(frozen=True)
class NetworkOptions:
    """How to run the switches of a network."""

    json_path: str | None
    pcap_dir: str | None = None
    bursts: tuple[str, ...] = ()
    static_arp: bool = False
    start_timeout: float = 60.0
    tls: tuple[str, ...] = ()  # the switches' TLS flags (topo.pki); empty: plaintext P4Runtime


def interface_name(node: str, port: int) -> str:
    """Mininet's name for `node`'s interface on `port`."""
    return f"{node}-eth{port}"


def root_interfaces(topo: Topology) -> list[str]:
    """The root-namespace interfaces a network of `topo` creates (the switch ends)."""
    names = []
    for link in topo.links:
        for end in (link.a, link.b):
            port = link.port_of(end)
            if end in topo.switches and port is not None:
                names.append(interface_name(end, port))
    return names


class GradNetwork:
    """A running (or stoppable) Mininet network of P4 switches and agent hosts."""

    def __init__(self, topo: Topology, record: RunRecord, options: NetworkOptions,
                 tool: Tool | None = None) -> None:
        self.topo = topo
        self.record = record
        self.options = options
        self.tool = tool or switch_tool()
        self.net: Mininet | None = None
        self.plan: ImpairmentPlan | None = None

    def plan_links(self) -> ImpairmentPlan:
        """Decide who makes each link impairment (writes the links' `impairment` field)."""
        needs = any(link.delay_ms or link.loss_pct for link in self.topo.links) or self.options.bursts
        netem = probe_qdiscs()["netem"] if needs else False
        self.plan = plan_impairments(self.topo, netem=netem, switch_kind=self.tool.kind,
                                     bursts=self.options.bursts)
        return self.plan

    def start(self) -> Mininet:
        """Create hosts, switches and links, start every switch and wait until all are ready.

        On failure everything created so far is torn down before the error propagates."""
        if self.options.json_path:
            ensure_exists(self.options.json_path)
        plan = self.plan or self.plan_links()
        self.record.add_interfaces(root_interfaces(self.topo))
        net = Mininet(topo=None, build=False, controller=None, autoSetMacs=False,
                      autoStaticArp=False, waitConnected=False)
        self.net = net
        try:
            self._add_nodes(net, plan)
            self._add_links(net, plan)
            net.build()
            net.start()
            for switch in net.switches:
                switch.wait_ready()
        except BaseException:
            self.stop()
            raise
        return net

    def _add_nodes(self, net: Mininet, plan: ImpairmentPlan) -> None:
        for name, sw in self.topo.switches.items():
            rates = {link.port_of(name): (link.a_queue_rate_pps if link.a == name else link.b_queue_rate_pps)
                     for link in self.topo.switch_links(name)}
            node = net.addSwitch(name, cls=P4Switch, desc=sw, tool=self.tool, json_path=self.options.json_path,
                                 record=self.record, impairments=plan.switch_specs.get(name, ()),
                                 port_rates={port: pps for port, pps in rates.items() if pps},
                                 port_byte_rates=self._byte_rates(name),
                                 pcap_dir=self.options.pcap_dir, start_timeout=self.options.start_timeout,
                                 tls=self.options.tls)
            self.record.add_process(node.pid, f"{name}-shell", "node-shell")
        for name, host in self.topo.hosts.items():
            router_mac = self.topo.switches[host.switch].router_mac if self.options.static_arp else None
            node = net.addHost(name, cls=GradHost, ip=f"{host.ip}/{host.prefix_len}", mac=host.mac,
                               gateway=host.gateway, router_mac=router_mac)
            self.record.add_process(node.pid, f"{name}-shell", "node-shell")

    def _byte_rates(self, name: str) -> dict[int, float]:
        """{port: bytes/s} of switch `name`'s byte-shaped ports."""
        out = {}
        for link in self.topo.switch_links(name):
            rate = link.a_byte_rate if link.a == name else link.b_byte_rate
            port = link.port_of(name)
            if rate and port is not None:
                out[port] = rate
        return out

    def _add_links(self, net: Mininet, plan: ImpairmentPlan) -> None:
        for index, link in enumerate(self.topo.links):
            params: dict[str, Any] = {}
            if link.bw_mbps:
                params["bw"] = link.bw_mbps
            if index in plan.netem_links:
                params.update(delay=f"{link.delay_ms:g}ms", loss=link.loss_pct)
            cls = TCLink if params else Link
            port1 = link.a_port if link.a in self.topo.switches else 0
            port2 = link.b_port if link.b in self.topo.switches else 0
            net.addLink(link.a, link.b, port1=port1, port2=port2, cls=cls, **params)

    def switch(self, name: str) -> P4Switch:
        """The running switch node `name`."""
        if self.net is None:
            raise TopoError("network is not running")
        node = self.net.get(name)
        if not isinstance(node, P4Switch):
            raise SwitchStartError(f"{name} is not a P4 switch")
        return node

    def stop(self) -> None:
        """Stop switch processes (by PID), then Mininet's links and nodes. Idempotent."""
        net, self.net = self.net, None
        if net is None:
            return
        for switch in net.switches:
            try:
                switch.stop(deleteIntfs=False)
            except Exception:  # keep tearing down the rest
                pass
        try:
            net.stop()
        finally:
            for node in net.hosts + net.switches:
                if node.pid:
                    self.record.forget_process(node.pid)
