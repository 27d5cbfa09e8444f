"""Run-time control of the switch's links: one port's impairment spec and egress rate.

`LinkControl` is what the Thrift link calls (`thrift.links`) and the start-up flags
(`--impair`, `--port-rate`) go through. A change is validated completely (spec syntax, port
exists, rate > 0) before anything is applied, and a spec's delay/loss part (on the ports)
and its rate bursts (on the traffic manager) take effect from the same instant.
"""
from __future__ import annotations

import time

from p4target.switch.errors import OptionError
from p4target.switch.links.impairments import Impairment, parse_impairment_spec
from p4target.switch.links.port_rates import PortRateSchedule
from p4target.switch.ports import PortError, SwitchPorts


class LinkControl:
    """Sets and reads per-port impairments and rates of one running switch."""

    def __init__(self, ports: SwitchPorts, rates: PortRateSchedule) -> None:
        self._ports = ports
        self._rates = rates

    def set_impairment(self, port: int, spec: str) -> Impairment | None:
        """Apply `spec` (`key=value,...` as in `--impair`, or `off`) to `port` from now on;
        returns the parsed impairment (None for off). OptionError/PortError change nothing."""
        impairment = parse_impairment_spec(spec)
        self._check_port(port)
        self.apply(port, impairment, time.monotonic())
        return impairment

    def apply(self, port: int, impairment: Impairment | None, since: float) -> None:
        """Apply a parsed impairment whose burst times count from `since` (monotonic)."""
        self._ports.set_impairment(port, impairment, since)
        self._rates.set_bursts(port, impairment.rate_bursts if impairment else (), since)

    def impairment(self, port: int) -> Impairment | None:
        """The impairment now set on `port` (None: none)."""
        return self._ports.impairment(port)

    def set_rate(self, port: int, pps: float | None) -> None:
        """Shape `port` to `pps` packets/s outside its rate bursts (None: unshaped)."""
        if pps is not None and not 0.0 < pps < float("inf"):
            raise OptionError(f"bad rate {pps:g} for port {port}: expected packets/s > 0 (or off)")
        self._check_port(port)
        self._rates.set_base_rate(port, pps)

    def rate(self, port: int) -> float | None:
        """`port`'s base rate (None: unshaped)."""
        self._check_port(port)
        return self._rates.base_rate(port)

    def _check_port(self, port: int) -> None:
        if port not in self._ports.ports:
            raise PortError(f"port {port} has no interface")
