"""Who takes part in a job's rounds, as the parameter server sees it: a worker may die or lose
the network, and come back.

A worker silent for its absence timeout (--peer-timeout; --join-timeout in round 0) is marked
absent: the PS goes on with the others, and every round it misses counts as a lost contribution.
A worker that joins again (HELLO, the same join path as at the start) is re-admitted at a round
boundary: it first pulls the current model whole, then pushes from the next round on. The job
may shrink to --min-workers; below that the PS waits up to --outage-horizon for workers to come
back (a network outage makes every worker absent at once), then stops with a one-line error.
"""
from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, field

from hosts.errors import ConfigError, PeerTimeout

DEFAULT_HORIZON_S = 30.0


def add_fault_arguments(ap: argparse.ArgumentParser, ps: bool) -> None:
    """The flags of riding out faults: the outage horizon (both sides), --min-workers (PS)."""
    g = ap.add_argument_group("faults")
    g.add_argument("--outage-horizon", type=float, default=DEFAULT_HORIZON_S, metavar="S",
                   help="how long an agent rides out a network outage or a lost peer "
                        "before it gives up (default 30 s). A worker that lost its PS joins "
                        f"again within it; {'the PS waits as long for workers to come back' if ps else 'the PS waits as long'}")
    if ps:
        g.add_argument("--min-workers", type=int, default=1, metavar="N",
                       help="the fewest workers the job may shrink to when workers die "
                            "(their absence timeout is --peer-timeout); below it for longer "
                            "than --outage-horizon the PS stops with an error (default 1)")


def check_fault_arguments(args: argparse.Namespace, workers: int | None = None) -> None:
    """ConfigError naming the flag when the values make no sense."""
    if not args.outage_horizon > 0:
        raise ConfigError(f"--outage-horizon {args.outage_horizon} must be a positive number of seconds")
    if workers is not None and not 1 <= args.min_workers <= workers:
        raise ConfigError(f"--min-workers {args.min_workers} must be within 1..--workers {workers}")


@dataclass
class Membership:
    """The PS's view of its workers over the rounds (see the module docstring)."""

    workers: int
    min_workers: int = 1
    horizon: float = DEFAULT_HORIZON_S
    first_push: dict[int, int] = field(default_factory=dict)   # rank -> first round it pushes
    absent: dict[int, int] = field(default_factory=dict)       # rank -> round it went absent
    lost: dict[int, int] = field(default_factory=dict)         # rank -> contributions lost
    rejoins: dict[int, int] = field(default_factory=dict)      # rank -> times re-admitted
    heard: set[int] = field(default_factory=set)   # ranks that exchanged data since their join
    next_pull: int = 0            # the next round whose pull group is not formed yet
    short_since: float | None = None

    def __post_init__(self) -> None:
        self.first_push = {r: 0 for r in range(self.workers)}

    def pushers(self, round_: int) -> list[int]:
        """Ranks whose push of ``round_`` the PS waits for."""
        return [r for r, first in sorted(self.first_push.items())
                if r not in self.absent and first <= round_]

    def pullers(self, round_: int) -> list[int]:
        """Ranks that get the pull of ``round_`` (a re-admitted rank pulls once before pushing)."""
        return [r for r, first in sorted(self.first_push.items())
                if r not in self.absent and first <= round_ + 1]

    def missing(self, round_: int) -> list[int]:
        """Ranks whose push ``round_`` goes on without: absent, or re-admitted but not yet
        pushing (they take the model first)."""
        return [r for r, first in sorted(self.first_push.items())
                if r in self.absent or first > round_]

    def mark_absent(self, rank: int, round_: int) -> bool:
        """``rank`` stayed silent past its absence timeout in ``round_``; False if it already was."""
        if rank in self.absent:
            return False
        self.absent[rank] = round_
        self.heard.discard(rank)
        return True

    def contribution_lost(self, rank: int) -> None:
        """A round went on without ``rank``'s push."""
        self.lost[rank] = self.lost.get(rank, 0) + 1

    def data_from(self, rank: int) -> None:
        """``rank`` pushed or pulled since it joined (a HELLO after this is a re-join)."""
        self.heard.add(rank)

    def hello(self, rank: int, restarted: bool = False) -> tuple[int, bool]:
        """A HELLO of ``rank``: (the first round it pushes, whether this re-admits it).

        The first join, and its repeated HELLOs before any data, keep round 0. A worker that
        was absent, or that exchanged data and says HELLO again (it restarted, or gave up on
        the PS during an outage), or ``restarted`` (it joined from a new address), lost its
        place: it pulls the next pull not yet formed whole, and pushes from the round after."""
        if not restarted and rank not in self.absent and rank not in self.heard:
            return self.first_push[rank], False
        self.absent.pop(rank, None)
        self.heard.discard(rank)
        self.first_push[rank] = self.next_pull + 1
        self.rejoins[rank] = self.rejoins.get(rank, 0) + 1
        return self.first_push[rank], True

    def check_quorum(self, round_: int, now: float | None = None) -> bool:
        """True when at least --min-workers take part in the pull of ``round_``. Below that,
        False while within the horizon; PeerTimeout once the job stayed short for longer."""
        now = time.monotonic() if now is None else now
        present = self.pullers(round_)
        if len(present) >= self.min_workers:
            self.short_since = None
            return True
        if self.short_since is None:
            self.short_since = now
        if now - self.short_since > self.horizon:
            gone = ", ".join(f"worker rank {r} absent since round {at}"
                             for r, at in sorted(self.absent.items()))
            raise PeerTimeout(f"the job shrank below --min-workers {self.min_workers}: "
                              f"{len(present)} of {self.workers} worker(s) left ({gone}) for "
                              f"{self.horizon:g} s (--outage-horizon)")
        return False

    def summary(self) -> dict[str, object]:
        """For the PS's `done` record."""
        return {"lost_contributions": {str(r): n for r, n in sorted(self.lost.items())},
                "rejoins": {str(r): n for r, n in sorted(self.rejoins.items())},
                "absent_at_end": sorted(self.absent), "min_workers": self.min_workers}
