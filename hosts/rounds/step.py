"""What stepping a round machine returns."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hosts.transport.router import INFINITY

__all__ = ["INFINITY", "Step"]


@dataclass
class Step:
    """`wake`: when the machine wants its next step if nothing arrives (INFINITY: only on
    news); `events`: what closed in this step, oldest first."""

    wake: float = INFINITY
    events: list[Any] = field(default_factory=list)
