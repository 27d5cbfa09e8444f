"""Structured annotations (``@name[...]``) as compile-time values, in the text form that
carries them to P4Info: ``@name[key="v", n=2, f=false]`` or ``@name[1, "x", true]``.

P4_16 allows only compile-time known values of type int, string or bool in them; anything
else (a sized literal ``8w9``, a ``bit<W>`` constant, a field) is an error, as in p4c; a
constant declared ``int``, ``bool`` or ``string`` stands for its value.
"""
from __future__ import annotations

import json
import operator
from typing import Any, Callable, Mapping

from p4target.compiler import ast
from p4target.compiler.types import Bool, InfInt, P4Type, StringT
from p4target.errors import CompileError

_INT_OPS: dict[str, Callable[[int, int], int]] = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "<<": operator.lshift,
    ">>": operator.rshift, "&": operator.and_, "|": operator.or_, "^": operator.xor}


Constants = Mapping[str, "tuple[Any, P4Type]"]


def structured_annotation_text(ann: ast.Annotation, consts: Constants | None = None) -> str:
    """The annotation's canonical text, its expressions evaluated (``consts``: the program's
    top-level constants, name -> (value, type))."""
    evaluate = _Evaluator(ann.name, consts or {})
    items = []
    for arg in ann.args:
        if isinstance(arg, ast.NamedArgument):
            items.append(f"{arg.name}={value_text(evaluate(arg.value))}")
        else:
            items.append(value_text(evaluate(arg)))
    return f"@{ann.name}[{', '.join(items)}]"


def value_text(value: int | str | bool) -> str:
    """A value as written in the canonical text: ``"s"``, ``12``, ``true``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    return str(value)


class _Evaluator:
    """Evaluates one structured annotation's expressions."""

    def __init__(self, name: str, consts: Constants) -> None:
        self.name = name
        self.consts = consts

    def __call__(self, e: Any) -> int | str | bool:
        if isinstance(e, (ast.StringLiteral, ast.BoolLiteral)):
            return e.value
        if isinstance(e, ast.IntLiteral) and e.width is None:
            return e.value
        if isinstance(e, ast.PathExpression) and e.name in self.consts:
            value, t = self.consts[e.name]
            if isinstance(t, (InfInt, Bool, StringT)):
                return value
        if isinstance(e, ast.UnaryExpression) and e.op in ("-", "!"):
            v = self(e.operand)
            if e.op == "-" and _is_int(v):
                return -v
            if e.op == "!" and isinstance(v, bool):
                return not v
        if isinstance(e, ast.BinaryExpression) and e.op in _INT_OPS:
            left, right = self(e.left), self(e.right)
            if _is_int(left) and _is_int(right):
                return _INT_OPS[e.op](left, right)
        raise CompileError.at(e.loc, f"@{self.name}: illegal value in a structured annotation; it must "
                                     "be a compile-time known int, string or bool")


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)
