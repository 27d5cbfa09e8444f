"""The end-host node: a Mininet host set up for raw-packet agents behind a user-space switch.

Checksum offloads off (else TCP/UDP checksums arrive wrong after a user-space switch), IPv6
off (no router solicitations or DAD noise on the wire), default route via the gateway that the
switch answers ARP for.
"""
from __future__ import annotations

from typing import Any

from mininet.node import Host

OFFLOADS = ("rx", "tx", "sg", "tso", "gso", "gro")


class GradHost(Host):
    """A Mininet host with offloads and IPv6 off and a default route via `gateway`."""

    def __init__(self, name: str, gateway: str | None = None, router_mac: str | None = None,
                 **params: Any) -> None:
        super().__init__(name, **params)
        self.gateway = gateway
        self.router_mac = router_mac

    def config(self, **params: Any) -> dict[str, Any]:
        """Mininet config plus offloads off, IPv6 off, default route (and static gateway ARP
        when `router_mac` is given)."""
        result = super().config(**params)
        intf = self.defaultIntf()
        for key in ("all", "default", "lo"):
            self.cmd(f"sysctl -qw net.ipv6.conf.{key}.disable_ipv6=1")
        if intf is not None:
            self.cmd(f"sysctl -qw net.ipv6.conf.{intf.name}.disable_ipv6=1")
            self.cmd(f"ethtool -K {intf.name} " + " ".join(f"{o} off" for o in OFFLOADS) + " >/dev/null 2>&1")
            if self.gateway:
                self.cmd(f"ip route replace default via {self.gateway} dev {intf.name}")
                if self.router_mac:
                    self.cmd(f"ip neigh replace {self.gateway} lladdr {self.router_mac} dev {intf.name} nud permanent")
        return result

    def offloads_off(self) -> bool:
        """True if tx/rx checksumming is off on the default interface (health check)."""
        intf = self.defaultIntf()
        out = self.cmd(f"ethtool -k {intf.name}")
        lines = {line.split(":")[0].strip(): line for line in out.splitlines()}
        return all("off" in lines.get(k, "off") for k in ("rx-checksumming", "tx-checksumming"))
