"""One training job's rounds over TCP in a simulated network: sizes from the model, round
times from the simulation (no training at this scale: gradients are sized, not computed)."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from hosts.errors import ConfigError
from hosts.training import dataset
from hosts.training.models import ModelSpec, parse_hidden
from sim.errors import SimError
from sim.network import SimNetwork

DIGITS_FEATURES = dataset.FEATURES
DIGITS_CLASSES = dataset.CLASSES
TCP_PORT = 5000


def model_layer_sizes(hidden: str, inputs: int = DIGITS_FEATURES, outputs: int = DIGITS_CLASSES,
                      kind: str = "mlp", filters: int = 16) -> list[int]:
    """Per transport layer, the elements (weights and biases) of the bundled model `kind` with
    `hidden` widths for `inputs` features and `outputs` classes, as hosts/training builds it."""
    try:
        spec = ModelSpec(kind, parse_hidden(hidden), filters)
        return list(spec.build(inputs, outputs, seed=0).layer_sizes())
    except ConfigError as exc:
        raise SimError(f"model: {exc}") from None


def model_parameters(hidden: str, inputs: int = DIGITS_FEATURES, outputs: int = DIGITS_CLASSES,
                     kind: str = "mlp", filters: int = 16) -> int:
    """Parameters (weights and biases) of the bundled model, all layers (`model_layer_sizes`)."""
    return sum(model_layer_sizes(hidden, inputs, outputs, kind, filters))


@dataclass
class RoundsOutcome:
    """Round start/end times and the end of each round's push stage (simulated seconds), and
    what the run cost."""

    starts: list[float]
    ends: list[float]
    planned: int
    wall_s: float
    switches: dict[str, Any] = field(default_factory=dict)
    link_drops: dict[str, int] = field(default_factory=dict)   # random loss per lossy link
    push_ends: list[float] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return len(self.ends) == self.planned


def run_tcp_rounds(net: SimNetwork, ps: str, workers: list[str], push_bytes: int, pull_bytes: int,
                   rounds: int, limit_s: float, compute_s: float = 0.0, jitter_s: float = 0.0,
                   serial: bool = False) -> RoundsOutcome:
    """Run `rounds` push/pull rounds between `workers` and `ps` (TCP as configured by
    `sim.tcp.configure`); stops at simulated time `limit_s` if they are not done by then. Each
    worker starts each push after a delay drawn uniformly from [0, `jitter_s`) (ns-3's random
    streams: set the seed and run number before building the network). A round starts when
    every worker has the last one's pull, and the PS writes every pull at once; with `serial`,
    as the loss-tolerant agents' --pull-schedule serial: no barrier, the pull worker after
    worker (`sim/cpp/apps.h`: TcpRounds)."""
    if not workers:
        raise SimError("a job needs at least one worker")
    if rounds < 1 or push_bytes < 1 or pull_bytes < 1:
        raise SimError("rounds, push_bytes and pull_bytes must be at least 1")
    if jitter_s < 0 or compute_s < 0:
        raise SimError("jitter_s and compute_s must not be negative")
    app = net.cpp.TcpRounds(net.node(ps), net.address(ps), TCP_PORT, push_bytes, pull_bytes, rounds, compute_s,
                            jitter_s, serial)
    for w in workers:
        app.AddWorker(net.node(w))
    app.Start(0.0)
    t0 = time.monotonic()
    net.run(limit_s)
    wall = time.monotonic() - t0
    return RoundsOutcome(starts=[float(x) for x in app.round_start], ends=[float(x) for x in app.round_end],
                         planned=rounds, wall_s=wall,
                         switches={name: sw.counters() for name, sw in net.switches.items()},
                         link_drops=net.link_drops(), push_ends=[float(x) for x in app.push_end])
