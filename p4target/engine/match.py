"""Match-key values of table entries, one class per P4 match kind.

A table entry's key is a sequence with one value per key field of the table, in the
order of the BMv2 JSON `key` list. A plain `int` is accepted for exact fields.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Union


@dataclass(frozen=True)
class Exact:
    """Exact match on `value`."""
    value: int


@dataclass(frozen=True)
class Lpm:
    """Longest-prefix match: the top `prefix_len` bits of the field equal those of `value`."""
    value: int
    prefix_len: int


@dataclass(frozen=True)
class Ternary:
    """Ternary match: `field & mask == value & mask`."""
    value: int
    mask: int


@dataclass(frozen=True)
class Range:
    """Range match: `low <= field <= high` (both inclusive)."""
    low: int
    high: int


@dataclass(frozen=True)
class Optional:
    """Optional match: exact on `value`, or anything when `wildcard` is true."""
    value: int = 0
    wildcard: bool = False


@dataclass(frozen=True)
class Valid:
    """BMv2 `valid` match kind: matches the header's validity bit."""
    valid: bool


MatchValue = Union[Exact, Lpm, Ternary, Range, Optional, Valid, int]
