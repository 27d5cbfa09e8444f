"""The topology description (docs/contracts.md, "Topology description"): model, JSON, checks.

topo writes it to `logs/<name>.topology.json`; the controller and the host agents read it.
"""
from __future__ import annotations

import ipaddress
import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from topo.errors import DescriptionError

ROLES = ("worker", "ps", "background", "host")
IMPAIRMENTS = ("netem", "switch", "none")
_MAC = re.compile(r"^[0-9a-f]{2}(:[0-9a-f]{2}){5}$")
_NAME = re.compile(r"^[a-z][a-z0-9]{0,9}$")  # short: Mininet interface names are NAME-ethN <= 15


@dataclass
class HostDesc:
    """One host: address, where it is attached and what it does."""

    ip: str
    prefix_len: int
    mac: str
    gateway: str
    switch: str
    switch_port: int
    role: str = "host"


@dataclass
class SwitchDesc:
    """One P4 switch: how to reach it and its traffic-manager settings."""

    device_id: int
    grpc_addr: str
    thrift_port: int
    router_mac: str
    log: str
    cpu_port: int = 255
    priority_queues: int = 8
    queue_depth: int = 64
    queue_rate_pps: float | None = None

    @property
    def grpc_port(self) -> int:
        """The TCP port of `grpc_addr`."""
        return int(self.grpc_addr.rpartition(":")[2])


@dataclass
class LinkDesc:
    """One link; `a_port`/`b_port` are P4 port numbers on switch ends, None on host ends."""

    a: str
    b: str
    a_port: int | None = None
    b_port: int | None = None
    bw_mbps: float | None = None
    delay_ms: float = 0
    loss_pct: float = 0
    impairment: str = "none"
    a_queue_rate_pps: float | None = None
    b_queue_rate_pps: float | None = None

    def port_of(self, node: str) -> int | None:
        """This link's port on `node` (a switch), or None."""
        return self.a_port if node == self.a else self.b_port if node == self.b else None

    def peer_of(self, node: str) -> str:
        """The node at the other end from `node`."""
        return self.b if node == self.a else self.a


@dataclass
class Topology:
    """A whole network: hosts, switches, links (keys as in docs/contracts.md)."""

    name: str
    hosts: dict[str, HostDesc] = field(default_factory=dict)
    switches: dict[str, SwitchDesc] = field(default_factory=dict)
    links: list[LinkDesc] = field(default_factory=list)

    # -- queries -------------------------------------------------------------------------
    def hosts_with_role(self, role: str) -> list[str]:
        """Names of the hosts whose role is `role`, in description order."""
        return [name for name, host in self.hosts.items() if host.role == role]

    def switch_links(self, switch: str) -> list[LinkDesc]:
        """Links with an end on `switch`."""
        return [link for link in self.links if switch in (link.a, link.b)]

    def ports(self, switch: str) -> dict[int, str]:
        """P4 port -> peer node name for `switch`."""
        out: dict[int, str] = {}
        for link in self.switch_links(switch):
            port = link.port_of(switch)
            assert port is not None
            out[port] = link.peer_of(switch)
        return out

    # -- JSON ----------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready dict of the contract."""
        links = []
        for link in self.links:
            item = asdict(link)
            for key in ("a_queue_rate_pps", "b_queue_rate_pps"):
                if item[key] is None:
                    del item[key]
            links.append(item)
        return {
            "name": self.name,
            "hosts": {name: asdict(h) for name, h in self.hosts.items()},
            "switches": {name: asdict(s) for name, s in self.switches.items()},
            "links": links,
        }

    def save(self, path: str | Path) -> Path:
        """Write the description as JSON (parent folders created); returns the path."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_dict(), indent=2) + "\n")
        return path

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Topology":
        """Build and validate a Topology from the contract's dict; raises DescriptionError."""
        try:
            topo = cls(
                name=data["name"],
                hosts={n: HostDesc(**h) for n, h in data.get("hosts", {}).items()},
                switches={n: SwitchDesc(**s) for n, s in data.get("switches", {}).items()},
                links=[LinkDesc(**link) for link in data.get("links", [])],
            )
        except (KeyError, TypeError) as exc:
            raise DescriptionError(f"bad topology description: {exc}") from None
        topo.validate()
        return topo

    @classmethod
    def load(cls, path: str | Path) -> "Topology":
        """Read and validate a description file."""
        try:
            data = json.loads(Path(path).read_text())
        except OSError as exc:
            raise DescriptionError(f"cannot read {path}: {exc.strerror}") from None
        except json.JSONDecodeError as exc:
            raise DescriptionError(f"{path}: not JSON ({exc.msg} at line {exc.lineno})") from None
        return cls.from_dict(data)

    # -- checks --------------------------------------------------------------------------
    def validate(self) -> None:
        """Raise DescriptionError on the first inconsistency (names, addresses, ports)."""
        nodes = set(self.hosts) | set(self.switches)
        if len(nodes) != len(self.hosts) + len(self.switches):
            raise DescriptionError("a name is used by a host and a switch")
        for name in nodes:
            if not _NAME.match(name):
                raise DescriptionError(f"bad node name '{name}': lower-case letter then letters/digits, <= 10 chars")
        seen_ips: set[str] = set()
        seen_macs: set[str] = set()
        for name, host in self.hosts.items():
            self._check_host(name, host, seen_ips, seen_macs)
        ids: set[int] = set()
        tcp_ports: set[int] = set()
        for name, sw in self.switches.items():
            if sw.device_id in ids:
                raise DescriptionError(f"switch {name}: device_id {sw.device_id} used twice")
            ids.add(sw.device_id)
            for port in (sw.grpc_port, sw.thrift_port):
                if port in tcp_ports:
                    raise DescriptionError(f"switch {name}: TCP port {port} used twice")
                tcp_ports.add(port)
            if not _MAC.match(sw.router_mac):
                raise DescriptionError(f"switch {name}: bad router_mac '{sw.router_mac}'")
            if not 1 <= sw.priority_queues <= 8:
                raise DescriptionError(f"switch {name}: priority_queues must be 1..8")
        used: dict[tuple[str, int], str] = {}
        for link in self.links:
            self._check_link(link, used)
        for name, host in self.hosts.items():
            links = [link for link in self.links if name in (link.a, link.b)]
            if len(links) != 1 or links[0].peer_of(name) != host.switch \
                    or links[0].port_of(host.switch) != host.switch_port:
                raise DescriptionError(
                    f"host {name}: needs exactly one link to {host.switch} port {host.switch_port}")

    def _check_host(self, name: str, host: HostDesc, ips: set[str], macs: set[str]) -> None:
        if host.role not in ROLES:
            raise DescriptionError(f"host {name}: role '{host.role}' (choose from {', '.join(ROLES)})")
        try:
            net = ipaddress.ip_interface(f"{host.ip}/{host.prefix_len}").network
            gw = ipaddress.ip_address(host.gateway)
        except ValueError as exc:
            raise DescriptionError(f"host {name}: {exc}") from None
        if gw not in net:
            raise DescriptionError(f"host {name}: gateway {host.gateway} is outside {net}")
        if host.ip in ips or not _MAC.match(host.mac) or host.mac in macs:
            raise DescriptionError(f"host {name}: IP or MAC missing, malformed or used twice")
        ips.add(host.ip)
        macs.add(host.mac)
        if host.switch not in self.switches:
            raise DescriptionError(f"host {name}: unknown switch '{host.switch}'")

    def _check_link(self, link: LinkDesc, used: dict[tuple[str, int], str]) -> None:
        for end, port in ((link.a, link.a_port), (link.b, link.b_port)):
            if end in self.switches:
                if port is None or not 1 <= port < self.switches[end].cpu_port:
                    raise DescriptionError(f"link {link.a}-{link.b}: switch {end} needs a port 1..cpu_port-1")
                if (end, port) in used:
                    raise DescriptionError(f"switch {end}: port {port} used by two links")
                used[(end, port)] = link.peer_of(end)
            elif end in self.hosts:
                if port is not None:
                    raise DescriptionError(f"link {link.a}-{link.b}: host end {end} takes no port")
            else:
                raise DescriptionError(f"link {link.a}-{link.b}: unknown node '{end}'")
        if link.impairment not in IMPAIRMENTS:
            raise DescriptionError(f"link {link.a}-{link.b}: impairment '{link.impairment}' "
                                   f"(choose from {', '.join(IMPAIRMENTS)})")
        if link.delay_ms < 0 or not 0 <= link.loss_pct <= 100:
            raise DescriptionError(f"link {link.a}-{link.b}: delay_ms >= 0 and loss_pct 0..100")
