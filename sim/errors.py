"""The one error type of `sim`: a clear one-line message for bad input or a missing ns-3."""
from __future__ import annotations


class SimError(Exception):
    """A simulation cannot be built or run as asked (the message says why)."""
