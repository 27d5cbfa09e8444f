"""Loss bursts on a running network's bottleneck links, started when the caller says so.

`RunConfig.bursts` schedules bursts from switch start, before any job exists; an experiment that
wants a burst to hit chosen training rounds starts it at run time instead. `BottleneckBursts`
sets, on both ends of every bottleneck link made by the embedded switch, the link's own
impairment (delay, loss) plus `burst=0s+DURATION@LOSS` through the switch's Thrift link service,
so the burst starts at the call and ends by itself.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from thrift.protocol import TBinaryProtocol, TMultiplexedProtocol
from thrift.Thrift import TException
from thrift.transport import TSocket, TTransport

from controller.topology import Link, Topology
from p4target.switch.thrift.links import SERVICE, LinkClient
from topo.errors import RunError


@dataclass(frozen=True)
class BurstEnd:
    """One switch port of a bottleneck link: where a burst is set, and the spec it keeps."""

    switch: str
    thrift_port: int
    port: int
    base_spec: str


def bottleneck_ends(topo: Topology, rated_only: bool = False) -> list[BurstEnd]:
    """The switch ends of every bottleneck link (one with a queue rate) in `topo`: both ends, or
    with `rated_only` only the ends whose egress has the queue rate (the congested direction)."""
    ends = []
    for link in topo.links:
        if link.a_queue_rate_pps is None and link.b_queue_rate_pps is None:
            continue
        for end in (link.a, link.b):
            port, rate = link.end(end)
            if end in topo.switches and port is not None and (rate is not None or not rated_only):
                # a netem-made impairment stays netem's; the switch then adds only the burst
                base = _base_spec(link) if link.impairment == "switch" else ""
                ends.append(BurstEnd(end, topo.switches[end].thrift_port, port, base))
    return ends


def _base_spec(link: Link) -> str:
    items = []
    if link.delay_ms:
        items.append(f"delay={link.delay_ms:g}ms")
    if link.loss_pct:
        items.append(f"loss={link.loss_pct / 100:g}")
    return ",".join(items)


def burst_spec(base_spec: str, duration_s: float, loss: float) -> str:
    """`base_spec` plus a burst of `loss` from now for `duration_s` seconds."""
    if not 0.0 < duration_s < float("inf"):
        raise RunError(f"bad burst duration {duration_s!r}: expected seconds > 0")
    if not 0.0 <= loss <= 1.0:
        raise RunError(f"bad burst loss {loss!r}: expected a probability in [0, 1]")
    burst = f"burst=0s+{duration_s * 1e3:.1f}ms@{loss:g}"
    return f"{base_spec},{burst}" if base_spec else burst


class BottleneckBursts:
    """Thrift connections to the switches at the bottleneck ends; `burst()` starts one burst."""

    def __init__(self, topo: Topology, rated_only: bool = False, host: str = "127.0.0.1",
                 timeout_s: float = 5.0) -> None:
        """`rated_only`: burst only the congested direction (see `bottleneck_ends`)."""
        self.ends = bottleneck_ends(topo, rated_only)
        if not self.ends:
            raise RunError(f"topology {topo.name} has no bottleneck link to burst")
        self._host = host
        self._timeout_ms = timeout_s * 1e3
        self._clients: dict[int, tuple[TTransport.TTransportBase, LinkClient]] = {}

    def _client(self, thrift_port: int) -> LinkClient:
        if thrift_port not in self._clients:
            logging.getLogger("thrift").setLevel(logging.CRITICAL)
            sock = TSocket.TSocket(self._host, thrift_port)
            sock.setTimeout(self._timeout_ms)
            transport = TTransport.TBufferedTransport(sock)
            client = LinkClient(TMultiplexedProtocol.TMultiplexedProtocol(
                TBinaryProtocol.TBinaryProtocol(transport), SERVICE))
            try:
                transport.open()
            except TTransport.TTransportException:
                raise RunError(f"cannot reach the switch's Thrift server at {self._host}:{thrift_port}") from None
            self._clients[thrift_port] = (transport, client)
        return self._clients[thrift_port][1]

    def connect(self) -> "BottleneckBursts":
        """Open every connection now, so the first burst is not delayed by connecting."""
        for end in self.ends:
            self._client(end.thrift_port)
        return self

    def burst(self, duration_s: float, loss: float) -> float:
        """Drop each frame leaving a bottleneck end with probability `loss` for `duration_s`
        from now; returns the monotonic time the burst was set (after the last end took it)."""
        for end in self.ends:
            spec = burst_spec(end.base_spec, duration_s, loss)
            try:
                self._client(end.thrift_port).set_port_impairment(end.port, spec)
            except TException as exc:
                reason = getattr(exc, "message", None) or str(exc) or type(exc).__name__
                raise RunError(f"{end.switch} port {end.port} refused burst '{spec}': {reason}") from None
        return time.monotonic()

    def current(self) -> dict[str, str]:
        """`switch:port` -> the impairment each end now has (for the run's record)."""
        return {f"{e.switch}:{e.port}": self._client(e.thrift_port).get_port_impairment(e.port)
                for e in self.ends}

    def close(self) -> None:
        """Close every connection."""
        for transport, _ in self._clients.values():
            transport.close()
        self._clients = {}

    def __enter__(self) -> "BottleneckBursts":
        return self.connect()

    def __exit__(self, *exc: object) -> None:
        self.close()
