"""Typed errors of the topo package; every one derives from `TopoError`."""
from __future__ import annotations


class TopoError(Exception):
    """Base of every error raised by topo/."""


class DescriptionError(TopoError):
    """A topology description is malformed or inconsistent."""


class ToolchainError(TopoError):
    """A tool (switch, compiler, Mininet, controller) is missing or unusable."""


class SwitchStartError(TopoError):
    """A P4 switch process did not come up (the message carries its log's tail)."""


class ProcessStartError(TopoError):
    """A helper process (controller, host agent) did not come up."""


class ImpairmentError(TopoError):
    """A requested link impairment cannot be made with what this machine has."""


class RunError(TopoError):
    """A run (interactive or demo) failed."""
