"""Per-packet state and the signals generated code raises (BMv2: `Packet`, `PHV`).

Every field of every header instance has a slot in one flat list `F` (the PHV); header
validity bits live in `V`, header-stack next indices in `NX`; the current length in bits of
each extracted varbit field lives in the per-packet dict `VL` (slot -> bits).
"""
from __future__ import annotations

# standard_metadata.instance_type values used by BMv2's simple_switch
NORMAL, INGRESS_CLONE, EGRESS_CLONE, COALESCED, RECIRC, REPLICATION, RESUBMIT = 0, 1, 2, 3, 4, 5, 6
DROP_PORT = 511


class ParserException(Exception):
    """Raised inside the parser with the numeric P4 error value."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


class ExitControl(Exception):
    """`exit` statement: leaves the current control."""


class AssertFailure(Exception):
    """An `assert`/`assume` failed: BMv2 stops processing the packet."""


class PacketState:
    """Per-packet state: the PHV plus the bookkeeping of v1model's primitives."""
    __slots__ = ("F", "V", "NX", "VL", "data", "off", "length", "length_reg", "clone", "resubmit", "recirc",
                 "digests", "truncate", "now_us", "orig", "logs", "passes", "exited")

    def __init__(self, F: list, V: list, NX: list) -> None:
        self.F = F
        self.V = V
        self.NX = NX
        self.VL: dict[int, int] = {}
        self.data = b""
        self.off = 0
        self.length = 0  # bytes received (BMv2's ingress length: counters and meters use it)
        # BMv2's packet-length register: add_header/remove_header adjust it and egress
        # reads standard_metadata.packet_length from it
        self.length_reg = 0
        self.clone = None
        self.resubmit = None
        self.recirc = None
        self.digests = None
        self.truncate = 0
        self.now_us = 0
        self.orig = b""
        self.logs = None
        self.passes = 0  # resubmit/recirculation count, bounded to stop endless loops
        self.exited = False  # an `exit` primitive ran: the current pipeline stops before its next node

    def copy(self) -> "PacketState":
        p = PacketState(self.F[:], self.V[:], self.NX[:])
        p.VL = dict(self.VL)
        p.data, p.off, p.length, p.orig, p.now_us = self.data, self.off, self.length, self.orig, self.now_us
        p.length_reg = self.length_reg
        p.truncate = self.truncate
        p.passes = self.passes
        return p
