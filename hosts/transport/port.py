"""The sans-IO side of an endpoint: what the transport's sessions send through and read with.

A `Port` frames control packets, signs what goes out (--packet-mac), validates what comes in
and counts every drop, but owns no socket and reads no clock of its own: the driver gives it
one (`clock`) and moves its datagrams. Sent datagrams wait in `outbox` until the driver takes
them (`take`); `hosts.transport.endpoint.Endpoint` is the socket driver's port, which puts each
one on its UDP socket at once instead. The sessions (`sender`, `receiver`) and the router
(`router`) see only this interface, so the same state machine runs over Linux sockets and in
a simulator (the ns-3 driver, outside `hosts`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from hosts import wire
from hosts.errors import PacketError
from hosts.transport import mac_impl, packet_mac
from hosts.transport.counters import Counters
from hosts.transport.data_frames import Frames
from hosts.transport.port_pacer import PortPacer


@dataclass(frozen=True, slots=True)
class Received:
    """A validated gradient-transport packet."""

    header: wire.Header
    payload: bytes
    addr: tuple[str, int]
    tos: int = 0    # IPv4 TOS byte as it arrived (ECN bits 1..0: CE = 3)


@dataclass(frozen=True, slots=True)
class Datagram:
    """One UDP datagram to send: its bytes (MAC trailer included), where to, with which TOS."""

    data: bytes
    addr: tuple[str, int]
    tos: int


class Port:
    """Frames, signs, validates and counts the datagrams of one agent's transport.

    `job_id` filters foreign jobs; `rank` is this agent's worker_rank on everything it sends.
    `plain`: every control packet carries FLAG_PLAIN and TOS 0 (no network assistance).
    `peer`: when set, datagrams from any other address are dropped (a worker talks to its
    parameter server only, so a spoofed packet cannot redirect or close its sessions).
    `mac_key`: the datagrams of the kinds `mac_mode` signs ("all": every one; "control": all
    but DATA) carry a MAC trailer under it, and one of those kinds received without a valid
    trailer is dropped (--packet-mac, hosts/transport/packet_mac.py). `mac` computes the
    trailers: the native MAC where it was built, else the Python reference
    (hosts/transport/mac_impl.py); assign another `mac_impl.make(...)` to change it.
    `clock`: the driver's time in seconds (sessions read it only when they are created).
    """

    def __init__(self, job_id: int, rank: int, clock: Callable[[], float],
                 counters: Counters | None = None, plain: bool = False,
                 peer: tuple[str, int] | None = None, mac_key: bytes | None = None,
                 mac_mode: str = "all") -> None:
        if mac_mode not in packet_mac.MODES:
            raise ValueError(f"mac_mode {mac_mode!r} is not one of {packet_mac.MODES}")
        self.job_id = job_id
        self.rank = rank
        self.clock = clock
        self.counters = counters if counters is not None else Counters()
        self.plain = plain
        self.peer = peer
        self.mac_key = mac_key if mac_mode != "off" else None
        self.mac_mode = mac_mode
        self.mac: mac_impl.Mac | None = (mac_impl.make(self.mac_key) if self.mac_key is not None
                                         else None)
        self.outbox: list[Datagram] = []
        self._pacer: PortPacer | None = None

    def pacer(self, port_mbps: float) -> PortPacer | None:
        """The budget of what this port carries at `port_mbps` Mb/s (None when 0: not known),
        one per port, shared by every session that sends DATA on it (port_pacer.py)."""
        if port_mbps <= 0:
            return None
        if self._pacer is None or self._pacer.rate_bps != port_mbps * 1e6:
            self._pacer = PortPacer.for_port(port_mbps)
        return self._pacer

    def take(self) -> list[Datagram]:
        """The datagrams sent since the last call, oldest first (the driver puts them on its wire)."""
        out, self.outbox = self.outbox, []
        return out

    def transmit(self, data: bytes, addr: tuple[str, int], tos: int) -> None:
        """Hand one finished datagram to the driver (here: queue it in `outbox`)."""
        self.outbox.append(Datagram(data, addr, tos))
        self.counters["bytes_sent"] += len(data)
        self.counters["packets_sent"] += 1

    def send(self, data: bytes, addr: tuple[str, int], tos: int) -> None:
        """Send one datagram with IPv4 TOS `tos` (signed first when its kind is signed)."""
        if self.mac is not None and packet_mac.signs(self.mac_mode, packet_mac.kind_of(data)):
            data = self.mac.sign(data)
        self.transmit(data, addr, tos)

    def send_data(self, frames: Frames, idx: int, flags: int, addr: tuple[str, int],
                  tos: int) -> int:
        """Send chunk `idx`'s DATA datagram of `frames` (hosts/transport/data_frames.py) with
        header flags `flags`; its length before any MAC trailer. A batch endpoint builds a
        native frame in its send queue instead of as bytes."""
        data = frames.frame(idx, flags)
        self.send(data, addr, tos)
        return len(data)

    def data_sink(self, frames: Frames) -> Callable[[Frames, int, int, tuple[str, int], int], int]:
        """What sends `frames`' DATA with `send_data`'s arguments and result: `send_data`
        itself, or a faster path to the same datagrams (a batch endpoint's send queue)."""
        return self.send_data

    def send_control(self, kind: int, addr: tuple[str, int], round_: int, flags: int = 0,
                     layer: int = wire.ALL_LAYERS, payload: bytes = b"", chunk_seq: int = 0,
                     tos: int | None = None, tele_qdepth: int = 0, tele_qdelay_us: int = 0) -> None:
        """One header-only (or small-payload) control packet; TOS defaults to CONTROL_TOS, or
        0 on a plain port (PCN passes its own TOS bits). An ACK's telemetry fields echo
        what the switches stamped into the DATA it acknowledges (switches stamp DATA only)."""
        if self.plain:
            flags |= wire.FLAG_PLAIN
        if tos is None:
            tos = 0 if self.plain else wire.CONTROL_TOS
        hdr = wire.pack_header(kind, flags, self.job_id, self.rank, layer, round_,
                               payload_len=len(payload), chunk_seq=chunk_seq,
                               tele_max_qdepth=min(tele_qdepth, 0xFFFF),
                               tele_qdelay_us=min(tele_qdelay_us, 0xFFFFFFFF))
        self.send(hdr + payload, addr, tos)

    def parse(self, data: bytes, addr: tuple[str, int], tos: int = 0) -> Received | None:
        """Validate one datagram; None (and a counted drop) if it is not ours or malformed."""
        self.counters["bytes_received"] += len(data)
        self.counters["packets_received"] += 1
        if self.peer is not None and addr != self.peer:
            self.counters["drop_wrong_source"] += 1
            return None
        if self.mac is not None and packet_mac.signs(self.mac_mode, packet_mac.kind_of(data)):
            verified = self.mac.verify(data)
            if verified is None:
                self.counters["drop_bad_mac"] += 1
                return None
            data = verified
        try:
            hdr = wire.unpack_header(data)
        except PacketError as exc:
            self.counters[f"drop_{exc.reason}"] += 1
            return None
        if hdr.kind not in wire.KIND_NAMES:
            self.counters["drop_corrupt"] += 1
            return None
        if hdr.job_id != self.job_id:
            self.counters["drop_foreign_job"] += 1
            return None
        return Received(hdr, data[wire.HEADER_LEN:], addr, tos)
