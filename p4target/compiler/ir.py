"""The lowering IR: statements of a block as a small control-flow form.

Straight-line code is BMv2 primitives (`Prims`); table applications, `if`, `switch`, `exit`,
`return` and loops stay structured, so that `controls` can turn them into a BMv2 pipeline graph
and `action_body` into the primitives of one action.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from p4target.compiler.values import TableSymbol


class Item:
    """One step of lowered control flow."""


@dataclass
class Prims(Item):
    primitives: list[dict]
    loc: Any = None  # where the first statement of the run is (names its synthesized action)


@dataclass
class ApplyTable(Item):
    table: TableSymbol
    node: Any


@dataclass
class IfItem(Item):
    cond: dict
    then: list[Item]
    otherwise: list[Item]


@dataclass
class HitItem(Item):
    """``if (t.apply().hit)``: ``then`` on hit, ``otherwise`` on miss."""
    table: TableSymbol
    node: Any
    then: list[Item]
    otherwise: list[Item]


@dataclass
class SwitchItem(Item):
    table: TableSymbol
    node: Any
    cases: list[tuple[list[str], list[Item]]] = field(default_factory=list)
    default: list[Item] | None = None


@dataclass
class ExitItem(Item):
    loc: Any = None


@dataclass
class ReturnItem(Item):
    pass


@dataclass
class LoopItem(Item):
    """A ``for`` loop inside an action that is not unrolled (BMv2 runs it with `_jump_if_zero` /
    `_jump`; see `loops`)."""
    init: list[Item]
    cond: dict | None
    body: list[Item]
    update: list[Item]


@dataclass
class BreakItem(Item):
    pass


@dataclass
class ContinueItem(Item):
    pass


@dataclass
class SubBlock(Item):
    """An inlined sub-control: ``return`` inside it continues after it."""
    items: list[Item]


def assign(dst: dict, src: dict) -> dict:
    return {"op": "assign", "parameters": [dst, src]}


def prim(op: str, *params: dict) -> dict:
    return {"op": op, "parameters": list(params)}


def merge(items: list[Item]) -> list[Item]:
    """Join neighbouring primitive runs."""
    out: list[Item] = []
    for it in items:
        if isinstance(it, Prims) and out and isinstance(out[-1], Prims):
            out[-1] = Prims(out[-1].primitives + it.primitives, out[-1].loc or it.loc)
        elif isinstance(it, Prims) and not it.primitives:
            continue
        else:
            out.append(it)
    return out
