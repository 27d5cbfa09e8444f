"""Typed errors of the switch package."""
from __future__ import annotations

from p4target.errors import P4TargetError


class SwitchError(P4TargetError):
    """Base class of every error the switch process reports to its user."""


class OptionError(SwitchError):
    """A command-line flag is missing, unknown or malformed."""


class PcapError(SwitchError):
    """A pcap file is truncated or not a pcap file."""


class PortError(SwitchError):
    """A port cannot be opened (missing interface, missing input file, no permission)."""
