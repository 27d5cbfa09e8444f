"""Typed errors of the hosts package; every one derives from HostsError."""


class HostsError(Exception):
    """Base of every error raised by gradlane's host agents."""


class ConfigError(HostsError):
    """A user-supplied setting is invalid (bad flag value, inconsistent bounds, ...)."""


class PacketError(HostsError):
    """A received packet is malformed; `reason` names the drop counter it goes to."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class PeerTimeout(HostsError):
    """A peer sent nothing for longer than the configured timeout (dead or unreachable)."""


class ControllerUnreachable(HostsError):
    """The controller named by --controller did not answer, or answered with an error."""
