"""The topology description of docs/contracts.md: its model, JSON reading and writing, and every
consistency rule, in one place (standard library only).

`topo/` builds a network and writes its description with this model; the controller programs
switches from the same file read back with it. The controller owns this module because the
description is its input (the switches it owns and how to reach them); `topo`, which wires the
packages together, imports it. Errors are :class:`~controller.errors.TopologyError`, one line
naming the file and the key: ``logs/t.json: hosts.h1.gateway: 10.9.9.9 is outside 10.0.1.0/24``.
"""
from __future__ import annotations

import ipaddress
import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from controller.errors import TopologyError

ROLES = ("worker", "ps", "background", "host")
IMPAIRMENTS = ("netem", "switch", "none")
MAX_PRIORITY_QUEUES = 8
_MAC = re.compile(r"^[0-9a-f]{2}(:[0-9a-f]{2}){5}$")
# Short: Mininet names interfaces NAME-ethN, and Linux allows 15 characters.
_NAME = re.compile(r"^[a-z][a-z0-9]{0,9}$")


@dataclass
class Host:
    """A host attached to one switch port."""

    name: str
    ip: str
    prefix_len: int
    mac: str
    gateway: str
    switch: str
    switch_port: int
    role: str = "host"

    @property
    def network(self) -> ipaddress.IPv4Network:
        """The host's IPv4 subnet."""
        return ipaddress.IPv4Interface(f"{self.ip}/{self.prefix_len}").network


@dataclass
class Switch:
    """A P4 switch: how to reach it and its traffic-manager settings."""

    name: str
    device_id: int
    grpc_addr: str
    thrift_port: int
    router_mac: str
    log: str | None = None
    cpu_port: int = 255
    priority_queues: int = MAX_PRIORITY_QUEUES
    queue_depth: int = 64
    queue_rate_pps: float | None = None

    @property
    def grpc_port(self) -> int:
        """The TCP port of `grpc_addr`."""
        return int(self.grpc_addr.rpartition(":")[2])


@dataclass
class Link:
    """A link; `a_port`/`b_port` are P4 port numbers on switch ends, None on host ends."""

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
    # bytes/s shaping the switch port as a whole: the embedded switch's --port-byte-rate (BMv2
    # has no byte rate; its queue rates count packets)
    a_byte_rate: float | None = None
    b_byte_rate: float | None = None

    def end(self, node: str) -> tuple[int | None, float | None]:
        """(port, queue rate) of this link's end on `node`."""
        if node == self.a:
            return self.a_port, self.a_queue_rate_pps
        if node == self.b:
            return self.b_port, self.b_queue_rate_pps
        return None, None

    def port_of(self, node: str) -> int | None:
        """This link's port on `node`, or None (a host end, or not an end)."""
        return self.end(node)[0]

    def peer(self, node: str) -> str:
        """The node at the other end from `node`."""
        return self.b if node == self.a else self.a


@dataclass
class Topology:
    """Hosts, switches and links of one network (keys as in docs/contracts.md)."""

    name: str
    hosts: dict[str, Host] = field(default_factory=dict)
    switches: dict[str, Switch] = field(default_factory=dict)
    links: list[Link] = field(default_factory=list)

    # -- queries -------------------------------------------------------------------------
    def hosts_with_role(self, role: str) -> list[str]:
        """Names of the hosts whose role is `role`, in description order."""
        return [name for name, host in self.hosts.items() if host.role == role]

    def switch_links(self, switch: str) -> list[Link]:
        """Links with an end on `switch`."""
        return [link for link in self.links if switch in (link.a, link.b)]

    def ports(self, switch: str) -> dict[int, str]:
        """P4 port -> peer node of `switch`."""
        out: dict[int, str] = {}
        for link in self.switch_links(switch):
            port = link.port_of(switch)
            if port is not None:
                out[port] = link.peer(switch)
        return out

    def switch_neighbors(self, switch: str) -> list[tuple[int, str]]:
        """(port, neighbouring switch) pairs of `switch`, by port."""
        return sorted((p, n) for p, n in self.ports(switch).items() if n in self.switches)

    # -- JSON ----------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready dict of the contract (per-end queue rates only where set)."""
        def without_name(obj: Host | Switch) -> dict[str, Any]:
            item = asdict(obj)
            del item["name"]
            return item

        links = []
        for link in self.links:
            item = asdict(link)
            for key in ("a_queue_rate_pps", "b_queue_rate_pps", "a_byte_rate", "b_byte_rate"):
                if item[key] is None:
                    del item[key]
            links.append(item)
        return {
            "name": self.name,
            "hosts": {name: without_name(h) for name, h in self.hosts.items()},
            "switches": {name: without_name(s) for name, s in self.switches.items()},
            "links": links,
        }

    def save(self, path: str | Path) -> Path:
        """Write the description as JSON (parent folders created); returns the path."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_dict(), indent=2) + "\n")
        return path

    @classmethod
    def from_dict(cls, data: Any, source: str = "topology") -> "Topology":
        """Read and validate the contract's dict; TopologyError names `source` and the key."""
        reader = _Reader(source)
        obj = reader.object(data, "")
        reader.keys(obj, "", required=("name",), optional=("hosts", "switches", "links"))
        topo = cls(name=reader.string(obj, "name", ""))
        for name, h in reader.object(obj.get("hosts", {}), "hosts").items():
            topo.hosts[name] = reader.host(name, h)
        for name, s in reader.object(obj.get("switches", {}), "switches").items():
            topo.switches[name] = reader.switch(name, s)
        links = obj.get("links", [])
        if not isinstance(links, list):
            raise TopologyError(f"{source}: links: expected a list")
        topo.links = [reader.link(i, link) for i, link in enumerate(links)]
        topo.validate(source)
        return topo

    @classmethod
    def load(cls, path: str | Path) -> "Topology":
        """Read and validate a description file."""
        try:
            data = json.loads(Path(path).read_text())
        except OSError as exc:
            raise TopologyError(f"cannot read topology {path}: {exc.strerror}") from None
        except json.JSONDecodeError as exc:
            raise TopologyError(f"{path}: not JSON ({exc.msg} at line {exc.lineno})") from None
        except UnicodeDecodeError as exc:
            raise TopologyError(f"{path}: not JSON ({exc.reason})") from None
        return cls.from_dict(data, str(path))

    # -- consistency ---------------------------------------------------------------------
    def validate(self, source: str = "topology") -> None:
        """Raise TopologyError on the first inconsistency (names, addresses, ports, links)."""
        def fail(where: str, message: str) -> NoReturn:
            raise TopologyError(f"{source}: {where}: {message}")

        for name in self.hosts.keys() & self.switches.keys():
            fail(f"hosts.{name}", "the name is also a switch's")
        for kind, names in (("hosts", self.hosts), ("switches", self.switches)):
            for name in names:
                if not isinstance(name, str) or not _NAME.match(name):
                    fail(f"{kind}.{name}", "bad name: a lower-case letter, then letters or digits, "
                                           "at most 10 characters")
        ips: dict[str, str] = {}
        macs: dict[str, str] = {}
        for name, host in self.hosts.items():
            where = f"hosts.{name}"
            if host.role not in ROLES:
                fail(f"{where}.role", f"'{host.role}' is not a role (choose from {', '.join(ROLES)})")
            try:
                net = host.network
            except ValueError as exc:
                fail(f"{where}.ip", str(exc))
            try:
                gateway = ipaddress.IPv4Address(host.gateway)
            except ValueError as exc:
                fail(f"{where}.gateway", str(exc))
            if gateway not in net:
                fail(f"{where}.gateway", f"{host.gateway} is outside {net}")
            if host.ip in ips:
                fail(f"{where}.ip", f"{host.ip} is used twice (also hosts.{ips[host.ip]})")
            ips[host.ip] = name
            if not _MAC.match(host.mac):
                fail(f"{where}.mac", f"'{host.mac}' is not a MAC address like 08:00:00:00:01:01")
            if host.mac in macs:
                fail(f"{where}.mac", f"{host.mac} is used twice (also hosts.{macs[host.mac]})")
            macs[host.mac] = name
            if host.switch not in self.switches:
                fail(f"{where}.switch", f"unknown switch '{host.switch}'")
        device_ids: dict[int, str] = {}
        tcp_ports: dict[int, str] = {}
        for name, sw in self.switches.items():
            where = f"switches.{name}"
            if sw.device_id in device_ids:
                fail(f"{where}.device_id", f"{sw.device_id} is used twice (also switches.{device_ids[sw.device_id]})")
            device_ids[sw.device_id] = name
            host_part, colon, port_text = sw.grpc_addr.rpartition(":")
            if not colon or not host_part or not port_text.isdigit() or not 0 < int(port_text) < 65536:
                fail(f"{where}.grpc_addr", f"'{sw.grpc_addr}' is not HOST:PORT")
            for key, port in (("grpc_addr", sw.grpc_port), ("thrift_port", sw.thrift_port)):
                if not 0 < port < 65536:
                    fail(f"{where}.{key}", f"TCP port {port} is not in 1..65535")
                if port in tcp_ports:
                    fail(f"{where}.{key}", f"TCP port {port} is used twice (also switches.{tcp_ports[port]})")
                tcp_ports[port] = name
            if not _MAC.match(sw.router_mac):
                fail(f"{where}.router_mac", f"'{sw.router_mac}' is not a MAC address like 00:00:0a:00:01:fe")
            if not 1 <= sw.priority_queues <= MAX_PRIORITY_QUEUES:
                fail(f"{where}.priority_queues", f"{sw.priority_queues} is not in 1..{MAX_PRIORITY_QUEUES}")
            if not 1 <= sw.cpu_port <= 511:
                fail(f"{where}.cpu_port", f"{sw.cpu_port} is not a P4 port in 1..511")
            if sw.queue_depth < 1:
                fail(f"{where}.queue_depth", f"{sw.queue_depth} is not a depth >= 1")
            if sw.queue_rate_pps is not None and not sw.queue_rate_pps > 0:
                fail(f"{where}.queue_rate_pps", f"{sw.queue_rate_pps} is not a rate > 0 (or null)")
        used: dict[tuple[str, int], int] = {}
        for i, link in enumerate(self.links):
            self._check_link(source, i, link, used)
        for name, host in self.hosts.items():
            links = [link for link in self.links if name in (link.a, link.b)]
            if len(links) != 1 or links[0].peer(name) != host.switch \
                    or links[0].port_of(host.switch) != host.switch_port:
                fail(f"hosts.{name}", f"needs exactly one link, to {host.switch} port {host.switch_port}")

    def _check_link(self, source: str, i: int, link: Link, used: dict[tuple[str, int], int]) -> None:
        where = f"links[{i}]"

        def fail(key: str, message: str) -> NoReturn:
            raise TopologyError(f"{source}: {where}{key}: {message}")

        if link.a == link.b:
            fail("", f"both ends are {link.a}")
        for side, node, port, rate in (("a", link.a, link.a_port, link.a_queue_rate_pps),
                                       ("b", link.b, link.b_port, link.b_queue_rate_pps)):
            if node in self.switches:
                cpu_port = self.switches[node].cpu_port
                if port is None or not 1 <= port < cpu_port:
                    fail(f".{side}_port", f"switch {node} needs a port in 1..{cpu_port - 1} "
                                          f"(below its cpu_port), got {port}")
                if (node, port) in used:
                    fail(f".{side}_port", f"switch {node} port {port} is used by links[{used[(node, port)]}] too")
                used[(node, port)] = i
                if rate is not None and not rate > 0:
                    fail(f".{side}_queue_rate_pps", f"{rate} is not a rate > 0 (or absent)")
                byte_rate = link.a_byte_rate if side == "a" else link.b_byte_rate
                if byte_rate is not None and not 0 < byte_rate < float("inf"):
                    fail(f".{side}_byte_rate", f"{byte_rate} is not a rate > 0 in bytes/s (or absent)")
            elif node in self.hosts:
                if port is not None:
                    fail(f".{side}_port", f"host end {node} takes no port (null)")
                if rate is not None:
                    fail(f".{side}_queue_rate_pps", f"host end {node} has no queues")
                if (link.a_byte_rate if side == "a" else link.b_byte_rate) is not None:
                    fail(f".{side}_byte_rate", f"host end {node} has no queues")
            else:
                fail(f".{side}", f"unknown node '{node}'")
        if link.impairment not in IMPAIRMENTS:
            fail(".impairment", f"'{link.impairment}' (choose from {', '.join(IMPAIRMENTS)})")
        if link.delay_ms < 0:
            fail(".delay_ms", f"{link.delay_ms} is below 0")
        if not 0 <= link.loss_pct <= 100:
            fail(".loss_pct", f"{link.loss_pct} is not in 0..100")
        if link.bw_mbps is not None and not link.bw_mbps > 0:
            fail(".bw_mbps", f"{link.bw_mbps} is not a bandwidth > 0 (or null)")


class _Reader:
    """Typed reads of the JSON values; errors name the source and the key path."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, where: str, message: str) -> TopologyError:
        return TopologyError(f"{self.source}: {where}: {message}" if where else f"{self.source}: {message}")

    def object(self, value: Any, where: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(where, "expected a JSON object")
        return value

    def keys(self, obj: dict[str, Any], where: str, required: tuple[str, ...], optional: tuple[str, ...]) -> None:
        prefix = f"{where}." if where else ""
        for key in required:
            if key not in obj:
                raise self.fail(f"{prefix}{key}", "missing")
        for key in obj:
            if key not in required and key not in optional:
                raise self.fail(f"{prefix}{key}", f"unknown key (known: {', '.join(required + optional)})")

    def string(self, obj: dict[str, Any], key: str, where: str) -> str:
        value = obj[key]
        if not isinstance(value, str):
            raise self.fail(f"{where}.{key}" if where else key, f"expected a string, got {value!r}")
        return value

    def integer(self, obj: dict[str, Any], key: str, where: str, default: Any = ...) -> Any:
        value = obj.get(key, default) if default is not ... else obj[key]
        if value is None and default is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(f"{where}.{key}", f"expected an integer, got {value!r}")
        return value

    def number(self, obj: dict[str, Any], key: str, where: str, default: Any) -> Any:
        value = obj.get(key, default)
        if value is None and default is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.fail(f"{where}.{key}", f"expected a number, got {value!r}")
        return float(value)

    def host(self, name: str, h: Any) -> Host:
        where = f"hosts.{name}"
        h = self.object(h, where)
        self.keys(h, where, ("ip", "prefix_len", "mac", "gateway", "switch", "switch_port"), ("role",))
        prefix_len = self.integer(h, "prefix_len", where)
        if not 0 <= prefix_len <= 32:
            raise self.fail(f"{where}.prefix_len", f"{prefix_len} is not in 0..32")
        return Host(name, self.string(h, "ip", where), prefix_len, self.string(h, "mac", where).lower(),
                    self.string(h, "gateway", where), self.string(h, "switch", where),
                    self.integer(h, "switch_port", where),
                    self.string(h, "role", where) if "role" in h else "host")

    def switch(self, name: str, s: Any) -> Switch:
        where = f"switches.{name}"
        s = self.object(s, where)
        self.keys(s, where, ("device_id", "grpc_addr", "thrift_port", "router_mac"),
                  ("log", "cpu_port", "priority_queues", "queue_depth", "queue_rate_pps"))
        log = s.get("log")
        if log is not None and not isinstance(log, str):
            raise self.fail(f"{where}.log", f"expected a string or null, got {log!r}")
        return Switch(name, self.integer(s, "device_id", where), self.string(s, "grpc_addr", where),
                      self.integer(s, "thrift_port", where), self.string(s, "router_mac", where).lower(), log,
                      self.integer(s, "cpu_port", where, 255),
                      self.integer(s, "priority_queues", where, MAX_PRIORITY_QUEUES),
                      self.integer(s, "queue_depth", where, 64),
                      self.number(s, "queue_rate_pps", where, None))

    def link(self, i: int, link: Any) -> Link:
        where = f"links[{i}]"
        link = self.object(link, where)
        self.keys(link, where, ("a", "b"), ("a_port", "b_port", "bw_mbps", "delay_ms", "loss_pct", "impairment",
                                            "a_queue_rate_pps", "b_queue_rate_pps", "a_byte_rate",
                                            "b_byte_rate"))
        return Link(self.string(link, "a", where), self.string(link, "b", where),
                    self.integer(link, "a_port", where, None), self.integer(link, "b_port", where, None),
                    self.number(link, "bw_mbps", where, None), self.number(link, "delay_ms", where, 0),
                    self.number(link, "loss_pct", where, 0),
                    self.string(link, "impairment", where) if "impairment" in link else "none",
                    self.number(link, "a_queue_rate_pps", where, None),
                    self.number(link, "b_queue_rate_pps", where, None),
                    self.number(link, "a_byte_rate", where, None),
                    self.number(link, "b_byte_rate", where, None))
