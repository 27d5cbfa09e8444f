"""Loss bounds per layer for the push and the tighter pull stage (DLCP); one fixed bound for
both stages (software MLT); a lossless pull (LTP's reliable broadcast).

Scope (docs/mechanisms.md, "Bound scope"): ``tensor`` pools the layers' budgets into one bound
over the whole tensor (LTP, MLT and DBLP: any chunk may be the missing one, layers with bound 0
excepted); ``layer`` holds each layer to its own bound (PLOT).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from hosts.errors import ConfigError
from hosts.transport.chunking import ChunkPlan

SCOPES = ("tensor", "layer")

# Without --pull-bound, the pull stage tolerates this fraction of the push bound.
DEFAULT_PULL_FRACTION = 0.25


def _check_bound(value: float, what: str) -> float:
    if not 0.0 <= value < 1.0:
        raise ConfigError(f"{what} {value} is outside [0, 1)")
    return value


def parse_bound_list(text: str, what: str) -> list[float]:
    """'0.01,0.004' -> [0.01, 0.004]; ConfigError naming `what` on bad input."""
    try:
        values = [float(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise ConfigError(f"{what} {text!r} is not a comma-separated list of numbers") from None
    if not values:
        raise ConfigError(f"{what} is empty")
    return [_check_bound(v, what) for v in values]


@dataclass(frozen=True)
class LayerBounds:
    """Fraction of each layer's elements that may stay undelivered, push and pull."""

    push: tuple[float, ...]
    pull: tuple[float, ...]
    scope: str = "layer"

    def __post_init__(self) -> None:
        if self.scope not in SCOPES:
            raise ConfigError(f"--bound-scope {self.scope!r} is not one of {', '.join(SCOPES)}")

    @classmethod
    def build(cls, num_layers: int, bound: float, layer_bounds: list[float] | None = None,
              pull_bound: float | None = None, scope: str = "layer") -> "LayerBounds":
        """From the agents' flags: one bound, optional per-layer overrides, optional pull bound
        (must be no looser than any push bound)."""
        _check_bound(bound, "--bound")
        if layer_bounds is not None:
            if len(layer_bounds) != num_layers:
                raise ConfigError(f"--layer-bounds has {len(layer_bounds)} values, the model has "
                                  f"{num_layers} layers")
            push = tuple(_check_bound(b, "--layer-bounds value") for b in layer_bounds)
        else:
            push = (bound,) * num_layers
        if pull_bound is None:
            pull = tuple(b * DEFAULT_PULL_FRACTION for b in push)
        else:
            _check_bound(pull_bound, "--pull-bound")
            if pull_bound > min(push):
                raise ConfigError(f"--pull-bound {pull_bound} is looser than the push bound "
                                  f"{min(push)}; the pull stage must be tighter")
            pull = (pull_bound,) * num_layers
        return cls(push, pull, scope)

    @classmethod
    def fixed(cls, num_layers: int, bound: float, scope: str = "layer") -> "LayerBounds":
        """One bound for every layer and both stages (the software-MLT baseline)."""
        _check_bound(bound, "--bound")
        return cls((bound,) * num_layers, (bound,) * num_layers, scope)

    def with_reliable_pull(self) -> "LayerBounds":
        """The same push bounds with a pull stage that must deliver everything (LTP)."""
        return LayerBounds(self.push, (0.0,) * len(self.push), self.scope)

    def with_scope(self, scope: str) -> "LayerBounds":
        return dataclasses.replace(self, scope=scope)

    def stage(self, pull: bool) -> tuple[float, ...]:
        return self.pull if pull else self.push

    def required_fraction(self, pull: bool) -> tuple[float, ...]:
        """Per layer, the delivered fraction at which a receiver may close."""
        return tuple(1.0 - b for b in (self.pull if pull else self.push))

    def critical_layers(self, pull: bool) -> frozenset[int]:
        """Layers whose bound is 0: every chunk must arrive (marked CRITICAL, never droppable)."""
        return frozenset(i for i, b in enumerate(self.pull if pull else self.push) if b == 0.0)


def violated_layers(fractions: list[float], bounds: tuple[float, ...] | list[float],
                    scope: str = "layer", sizes: list[int] | None = None) -> list[int]:
    """Layers whose delivered fraction stayed below 1 - bound: a close (by the deadline) that
    left more loss than the bound allows. In tensor scope (``sizes`` given) only when the
    pooled budget was exceeded, or a bound-0 layer is incomplete."""
    below = [i for i, (f, b) in enumerate(zip(fractions, bounds)) if f < 1.0 - b - 1e-9]
    if scope == "layer" or sizes is None:
        return below
    missing = sum((1.0 - f) * n for f, b, n in zip(fractions, bounds, sizes) if b > 0.0)
    budget = sum(b * n for b, n in zip(bounds, sizes))
    if missing > budget + 1e-6:
        return below
    return [i for i in below if bounds[i] == 0.0]


def budget_elements(bounds: tuple[float, ...], plan: ChunkPlan) -> list[float]:
    """Per layer, how many elements may stay undelivered."""
    return [b * n for b, n in zip(bounds, plan.layer_sizes)]


@dataclass(frozen=True)
class LossBudget:
    """How many whole chunks a receiver may leave missing (at least that many: the short last
    chunk of a layer may let one more go), as the sender counts them: per layer, and over the
    tensor in tensor scope. Layers with bound 0 (`critical`) must arrive whole."""

    scope: str
    per_layer: tuple[int, ...]
    total: int
    critical: frozenset[int] = frozenset()

    @classmethod
    def of(cls, bounds: tuple[float, ...], plan: ChunkPlan, scope: str) -> "LossBudget":
        budget = budget_elements(bounds, plan)
        per_layer = tuple(int(b // c) for b, c in zip(budget, plan.layer_chunk_elems))
        # pooled: counted in the largest chunks, so any chunks that many may be missing
        total = int(sum(budget) // plan.chunk_elems) if scope == "tensor" else sum(per_layer)
        return cls(scope, per_layer, total, frozenset(i for i, b in enumerate(bounds) if b == 0.0))

    @classmethod
    def none(cls, plan: ChunkPlan) -> "LossBudget":
        """Nothing may be missing (a reliable transfer)."""
        return cls("layer", (0,) * plan.num_layers, 0, frozenset(range(plan.num_layers)))

    def covers(self, missing: list[int]) -> bool:
        """Is the receiver's bound met with `missing[l]` chunks of each layer l missing?"""
        if any(missing[i] for i in self.critical):
            return False
        if self.scope == "tensor":
            return sum(missing) <= self.total
        return all(m <= b for m, b in zip(missing, self.per_layer))


def sub_chunk_notes(bounds: LayerBounds, plan: ChunkPlan) -> list[str]:
    """Bounds too small to let one chunk go, stage by stage: those stages run reliable
    ("push layer 2: bound 0.4% < 1 chunk: reliable")."""
    notes = []
    for stage, values in (("push", bounds.push), ("pull", bounds.pull)):
        smallest = [min(e, n - (c - 1) * e)
                    for n, c, e in zip(plan.layer_sizes, plan.chunk_counts, plan.layer_chunk_elems)]
        budget = budget_elements(values, plan)
        if bounds.scope == "tensor":
            open_layers = [i for i, b in enumerate(values) if b > 0.0]
            if open_layers and sum(budget) < min(smallest[i] for i in open_layers):
                mean = sum(budget) / sum(plan.layer_sizes)
                notes.append(f"{stage} tensor: bound {mean * 100:.3g}% < 1 chunk: reliable")
            continue
        for i, (b, elems) in enumerate(zip(values, budget)):
            if b > 0.0 and elems < smallest[i]:
                notes.append(f"{stage} layer {i}: bound {b * 100:.3g}% < 1 chunk: reliable")
    return notes
