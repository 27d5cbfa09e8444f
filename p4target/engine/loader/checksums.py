"""Checksums (BMv2: `Checksum`): verification after parsing, update before deparsing."""
from __future__ import annotations

from typing import Callable

from .calculations import Calculations
from .codegen import Namespace
from .expressions import Expressions
from .layout import Layout


def build_checksums(checksums: list[dict], layout: Layout, exprs: Expressions, calcs: Calculations,
                    ns: Namespace) -> tuple[Callable, Callable]:
    """(verify, update) functions `(P) -> None`; a failed verification sets checksum_error."""
    verify_body: list[str] = []
    update_body: list[str] = []
    cerr = layout.sm_opt("checksum_error")
    for c in checksums:
        calc = calcs.symbol(c["calculation"])
        target = layout.fidx(c["target"])
        cond = exprs.ex(c["if_cond"]) if c.get("if_cond") else "1"
        w = layout.field_width[target]
        if c.get("verify", True) and cerr is not None:
            verify_body.append(f"if {cond} and ({calc}(P) & {(1 << w) - 1}) != F[{target}]: F[{cerr}] = 1")
        if c.get("update", True):
            update_body.append(f"if {cond}: F[{target}] = {calc}(P) & {(1 << w) - 1}")
    return ns.compile_fn("verify", "P", verify_body), ns.compile_fn("update", "P", update_body)
