"""A job's layout: the model's parameters (names and sizes, in order) as the transport's layers,
and the per-layer loss bounds its parameter names select."""
from __future__ import annotations

import fnmatch
from dataclasses import dataclass

from hosts.errors import ConfigError
from hosts.transport.bounds import parse_bound_list


@dataclass(frozen=True)
class Layout:
    """Transport layer l = parameter l: `names[l]` with `sizes[l]` elements."""

    names: tuple[str, ...]
    sizes: tuple[int, ...]

    def __post_init__(self) -> None:
        if not self.names or len(self.names) != len(self.sizes):
            raise ConfigError("a layout needs one size per parameter name, and at least one")
        if any(not isinstance(n, int) or n <= 0 for n in self.sizes):
            raise ConfigError(f"layout sizes must be positive integers, got {list(self.sizes)}")

    @classmethod
    def of(cls, module) -> "Layout":   # noqa: ANN001 - a torch.nn.Module
        """The trainable parameters of `module`, in `named_parameters()` order."""
        pairs = [(n, p.numel()) for n, p in module.named_parameters() if p.requires_grad]
        if not pairs:
            raise ConfigError("the model has no trainable parameters")
        return cls(tuple(n for n, _ in pairs), tuple(int(s) for _, s in pairs))

    @classmethod
    def from_json(cls, record: object) -> "Layout":
        """From `as_json`'s dict; ConfigError on anything else."""
        if not isinstance(record, dict):
            raise ConfigError("a layout is a JSON object with names and sizes")
        names, sizes = record.get("names"), record.get("sizes")
        if not (isinstance(names, list) and isinstance(sizes, list)
                and all(isinstance(n, str) for n in names)):
            raise ConfigError("a layout's names must be a list of strings and sizes a list")
        return cls(tuple(names), tuple(sizes))

    def as_json(self) -> dict:
        return {"names": list(self.names), "sizes": list(self.sizes)}

    @property
    def elements(self) -> int:
        return sum(self.sizes)

    def difference(self, other: "Layout") -> str | None:
        """None when `other` is this layout, else what differs first, in words."""
        if len(other.sizes) != len(self.sizes):
            return (f"{len(other.sizes)} parameters ({other.elements} elements) where the job has "
                    f"{len(self.sizes)} ({self.elements} elements)")
        for i, (a, b) in enumerate(zip(zip(self.names, self.sizes), zip(other.names, other.sizes))):
            if a != b:
                return (f"parameter {i} is {b[0]!r} of {b[1]} elements where the job has "
                        f"{a[0]!r} of {a[1]}")
        return None


def parse_name_bounds(items: list[str] | None) -> list[tuple[str, float]]:
    """['norm*=0', 'classifier.*=0.02'] -> [('norm*', 0.0), ('classifier.*', 0.02)]."""
    out = []
    for item in items or []:
        pattern, sep, value = item.rpartition("=")
        if not sep or not pattern:
            raise ConfigError(f"--name-bound {item!r} is not PATTERN=BOUND")
        out.append((pattern, parse_bound_list(value, f"--name-bound {item!r}")[0]))
    return out


def layer_bounds(layout: Layout, default: float, name_bounds: list[tuple[str, float]]) -> list[float]:
    """Per layer: the bound of the first pattern (fnmatch) its parameter's name matches, else
    `default`. ConfigError for a pattern that matches no parameter (a typo would pass silently)."""
    bounds = []
    used = set()
    for name in layout.names:
        for pattern, bound in name_bounds:
            if fnmatch.fnmatchcase(name, pattern):
                bounds.append(bound)
                used.add(pattern)
                break
        else:
            bounds.append(default)
    unused = [p for p, _ in name_bounds if p not in used]
    if unused:
        raise ConfigError(f"--name-bound {unused[0]!r} matches no parameter of the model "
                          f"(parameters: {', '.join(layout.names[:6])}{', ...' if len(layout.names) > 6 else ''})")
    return bounds
