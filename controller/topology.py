"""The controller's reading of the topology description (docs/contracts.md).

Only what the controller needs: hosts (address, MAC, where attached), switches (how to reach
them, router MAC, queue settings) and links (ports). Errors name the key that is wrong.
"""
from __future__ import annotations

import ipaddress
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Union

from controller.errors import ConfigError


@dataclass(frozen=True)
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
        return ipaddress.ip_interface(f"{self.ip}/{self.prefix_len}").network


@dataclass(frozen=True)
class Switch:
    """A P4 switch and how the controller reaches it."""

    name: str
    device_id: int
    grpc_addr: str
    thrift_port: int
    router_mac: str
    cpu_port: int = 255
    priority_queues: int = 8
    queue_depth: int = 64
    queue_rate_pps: Optional[float] = None


@dataclass(frozen=True)
class Link:
    """A link; ports are set on switch ends only."""

    a: str
    b: str
    a_port: Optional[int] = None
    b_port: Optional[int] = None
    a_queue_rate_pps: Optional[float] = None
    b_queue_rate_pps: Optional[float] = None

    def end(self, node: str) -> tuple[Optional[int], Optional[float]]:
        """(port, queue rate) of this link's end on ``node``."""
        if node == self.a:
            return self.a_port, self.a_queue_rate_pps
        return self.b_port, self.b_queue_rate_pps

    def peer(self, node: str) -> str:
        """The node at the other end from ``node``."""
        return self.b if node == self.a else self.a


@dataclass
class Topology:
    """Hosts, switches and links of one network."""

    name: str
    hosts: dict[str, Host] = field(default_factory=dict)
    switches: dict[str, Switch] = field(default_factory=dict)
    links: list[Link] = field(default_factory=list)

    def ports(self, switch: str) -> dict[int, str]:
        """P4 port -> peer node of ``switch``."""
        out: dict[int, str] = {}
        for link in self.links:
            if switch in (link.a, link.b):
                port, _ = link.end(switch)
                if port is not None:
                    out[port] = link.peer(switch)
        return out

    def switch_neighbors(self, switch: str) -> list[tuple[int, str]]:
        """(port, neighbouring switch) pairs of ``switch``, by port."""
        return sorted((p, n) for p, n in self.ports(switch).items() if n in self.switches)

    @classmethod
    def from_dict(cls, data: Any, source: str = "topology") -> "Topology":
        """Parse the contract's dict; ConfigError names the offending key."""
        if not isinstance(data, dict):
            raise ConfigError(f"{source}: not a JSON object")
        topo = cls(name=str(data.get("name", "topology")))
        try:
            for name, h in dict(data.get("hosts", {})).items():
                where = f"{source}: hosts.{name}"
                _need(h, ("ip", "prefix_len", "mac", "gateway", "switch", "switch_port"), where)
                topo.hosts[name] = Host(name, str(h["ip"]), int(h["prefix_len"]), str(h["mac"]).lower(),
                                        str(h["gateway"]), str(h["switch"]), int(h["switch_port"]),
                                        str(h.get("role", "host")))
                try:
                    topo.hosts[name].network
                    ipaddress.IPv4Address(h["gateway"])
                except ValueError as exc:
                    raise ConfigError(f"{where}: {exc}") from None
            for name, s in dict(data.get("switches", {})).items():
                where = f"{source}: switches.{name}"
                _need(s, ("device_id", "grpc_addr", "thrift_port", "router_mac"), where)
                rate = s.get("queue_rate_pps")
                topo.switches[name] = Switch(
                    name, int(s["device_id"]), str(s["grpc_addr"]), int(s["thrift_port"]),
                    str(s["router_mac"]).lower(), int(s.get("cpu_port", 255)),
                    int(s.get("priority_queues", 8)), int(s.get("queue_depth", 64)),
                    None if rate is None else float(rate))
            for i, link in enumerate(list(data.get("links", []))):
                where = f"{source}: links[{i}]"
                _need(link, ("a", "b"), where)
                topo.links.append(Link(
                    str(link["a"]), str(link["b"]), _opt_int(link.get("a_port")),
                    _opt_int(link.get("b_port")), _opt_float(link.get("a_queue_rate_pps")),
                    _opt_float(link.get("b_queue_rate_pps"))))
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{source}: malformed value ({exc})") from None
        topo._check(source)
        return topo

    @classmethod
    def load(cls, path: Union[str, Path]) -> "Topology":
        """Read a topology description file."""
        try:
            data = json.loads(Path(path).read_text())
        except OSError as exc:
            raise ConfigError(f"cannot read topology {path}: {exc.strerror}") from None
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path}: not JSON ({exc.msg} at line {exc.lineno})") from None
        return cls.from_dict(data, str(path))

    def _check(self, source: str) -> None:
        for h in self.hosts.values():
            if h.switch not in self.switches:
                raise ConfigError(f"{source}: hosts.{h.name}.switch: unknown switch '{h.switch}'")
        for i, link in enumerate(self.links):
            for node in (link.a, link.b):
                if node not in self.switches and node not in self.hosts:
                    raise ConfigError(f"{source}: links[{i}]: unknown node '{node}'")
                if node in self.switches and link.end(node)[0] is None:
                    raise ConfigError(f"{source}: links[{i}]: switch end {node} needs a port")


def _need(obj: Any, keys: tuple[str, ...], where: str) -> None:
    if not isinstance(obj, dict):
        raise ConfigError(f"{where}: not an object")
    for key in keys:
        if key not in obj:
            raise ConfigError(f"{where}.{key}: missing")


def _opt_int(v: Any) -> Optional[int]:
    return None if v is None else int(v)


def _opt_float(v: Any) -> Optional[float]:
    return None if v is None else float(v)
