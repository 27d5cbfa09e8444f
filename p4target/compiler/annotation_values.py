"""Structured annotations (``@name[...]``) as compile-time values, in the text form that
carries them to P4Info: ``@name[key="v", n=2, f=false]`` or ``@name[1, "x", true]``.

P4_16 allows only compile-time known values of type int, string or bool in them; anything
else (a sized literal ``8w9``, a field) is an error, as in p4c.
"""
from __future__ import annotations

import json
import operator
from typing import Any, Callable

from p4target.compiler import ast
from p4target.errors import CompileError

_INT_OPS: dict[str, Callable[[int, int], int]] = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "<<": operator.lshift,
    ">>": operator.rshift, "&": operator.and_, "|": operator.or_, "^": operator.xor}


def structured_annotation_text(ann: ast.Annotation) -> str:
    """The annotation's canonical text, its expressions evaluated."""
    items = []
    for arg in ann.args:
        if isinstance(arg, ast.NamedArgument):
            items.append(f"{arg.name}={value_text(_evaluate(ann.name, arg.value))}")
        else:
            items.append(value_text(_evaluate(ann.name, arg)))
    return f"@{ann.name}[{', '.join(items)}]"


def value_text(value: int | str | bool) -> str:
    """A value as written in the canonical text: ``"s"``, ``12``, ``true``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    return str(value)


def _evaluate(name: str, e: Any) -> int | str | bool:
    if isinstance(e, ast.StringLiteral):
        return e.value
    if isinstance(e, ast.BoolLiteral):
        return e.value
    if isinstance(e, ast.IntLiteral) and e.width is None:
        return e.value
    if isinstance(e, ast.UnaryExpression) and e.op == "-":
        v = _evaluate(name, e.operand)
        if isinstance(v, int) and not isinstance(v, bool):
            return -v
    if isinstance(e, ast.UnaryExpression) and e.op == "!":
        v = _evaluate(name, e.operand)
        if isinstance(v, bool):
            return not v
    if isinstance(e, ast.BinaryExpression) and e.op in _INT_OPS:
        left, right = _evaluate(name, e.left), _evaluate(name, e.right)
        if all(isinstance(v, int) and not isinstance(v, bool) for v in (left, right)):
            return _INT_OPS[e.op](left, right)
    raise CompileError.at(e.loc, f"@{name}: illegal value in a structured annotation; it must be a "
                                 "compile-time known int, string or bool")
