"""Named event counters (drops by reason, bytes, retransmissions) of one agent."""
from __future__ import annotations

from collections import Counter


class Counters(Counter):
    """A Counter of named events; `snapshot()` gives a plain dict for JSON logs."""

    def snapshot(self) -> dict[str, int]:
        return dict(sorted(self.items()))

    def since(self, earlier: dict[str, int]) -> dict[str, int]:
        """Increments since an earlier snapshot (only non-zero ones)."""
        return {k: v - earlier.get(k, 0) for k, v in sorted(self.items()) if v != earlier.get(k, 0)}
