"""Loss bounds per layer (PLOT) for the push and the tighter pull stage (DLCP); one fixed bound
for both stages (software MLT); a lossless pull (LTP's reliable broadcast)."""
from __future__ import annotations

from dataclasses import dataclass

from hosts.errors import ConfigError

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

    @classmethod
    def build(cls, num_layers: int, bound: float, layer_bounds: list[float] | None = None,
              pull_bound: float | None = None) -> "LayerBounds":
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
        return cls(push, pull)

    @classmethod
    def fixed(cls, num_layers: int, bound: float) -> "LayerBounds":
        """One bound for every layer and both stages (the software-MLT baseline)."""
        _check_bound(bound, "--bound")
        return cls((bound,) * num_layers, (bound,) * num_layers)

    def with_reliable_pull(self) -> "LayerBounds":
        """The same push bounds with a pull stage that must deliver everything (LTP)."""
        return LayerBounds(self.push, (0.0,) * len(self.push))

    def required_fraction(self, pull: bool) -> tuple[float, ...]:
        """Per layer, the delivered fraction at which a receiver may close."""
        return tuple(1.0 - b for b in (self.pull if pull else self.push))

    def critical_layers(self, pull: bool) -> frozenset[int]:
        """Layers whose bound is 0: every chunk must arrive (marked CRITICAL, never droppable)."""
        return frozenset(i for i, b in enumerate(self.pull if pull else self.push) if b == 0.0)


def violated_layers(fractions: list[float], bounds: tuple[float, ...] | list[float]) -> list[int]:
    """Layers whose delivered fraction stayed below 1 - bound: a close (by the deadline) that
    left more loss than the bound allows."""
    return [i for i, (f, b) in enumerate(zip(fractions, bounds)) if f < 1.0 - b - 1e-9]
