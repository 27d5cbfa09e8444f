"""Turning generated Python source into functions, safely.

The engine compiles each program's expressions and action bodies into Python source once, so
the per-packet path never looks at the JSON again. A pipeline is data, never code: every value
from the JSON reaches the source only as a validated integer (`int_literal`), a `repr()` of a
validated string (`str_literal`), or a symbol of the namespace the code runs in
(`Namespace.const`). As a second line, `Namespace.compile_fn` audits each function before it
runs: only the names `names` declares (and fresh symbols), only the attributes it lists,
nothing spelled with a double underscore, no imports, and no builtins but a few pure ones.
"""
from __future__ import annotations

import ast
import re
from typing import Any, Callable

from ..errors import ProgramLoadError
from . import names

_ALLOWED_NODES = (
    ast.Module, ast.FunctionDef, ast.arguments, ast.arg, ast.Return, ast.Assign, ast.AugAssign,
    ast.If, ast.While, ast.Break, ast.Pass, ast.Raise, ast.Expr, ast.BoolOp, ast.BinOp, ast.UnaryOp,
    ast.IfExp, ast.Compare, ast.Call, ast.Constant, ast.Attribute, ast.Subscript, ast.Slice,
    ast.Name, ast.List, ast.Tuple, ast.ListComp, ast.GeneratorExp, ast.comprehension, ast.For,
    ast.Load, ast.Store, ast.And, ast.Or, ast.Add, ast.Sub, ast.Mult, ast.FloorDiv,
    ast.Mod, ast.LShift, ast.RShift, ast.BitOr, ast.BitXor, ast.BitAnd, ast.Invert, ast.Not,
    ast.USub, ast.UAdd, ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE,
)

_KIND = re.compile(r"[a-z]+\Z")
_FRESH = re.compile(r"_[a-z]+[0-9]+\Z")


def int_literal(value: Any, what: str) -> str:
    """Source text of an integer from the JSON; anything but an int (bools included) is refused."""
    if type(value) is not int:
        raise ProgramLoadError(f"{what} must be an integer, got {value!r:.60}")
    return str(value)


def str_literal(value: Any, what: str) -> str:
    """Source text of a string from the JSON, as a quoted literal."""
    if type(value) is not str:
        raise ProgramLoadError(f"{what} must be a string, got {value!r:.60}")
    return repr(value)


def _offence(node: ast.AST, fn_name: str) -> str | None:
    if not isinstance(node, _ALLOWED_NODES):
        return f"construct {type(node).__name__}"
    if isinstance(node, ast.Name):
        if "__" in node.id:
            return f"name {node.id!r}"
        if isinstance(node.ctx, ast.Store):
            return None if node.id in names.LOCALS or node.id == fn_name else f"local {node.id!r}"
        if node.id not in names.LOCALS and node.id not in names.GLOBALS and not _FRESH.match(node.id):
            return f"name {node.id!r}"
    elif isinstance(node, ast.Attribute) and node.attr not in names.ATTRIBUTES:
        return f"attribute {node.attr!r}"
    elif isinstance(node, ast.arg) and node.arg not in names.ARGUMENTS:
        return f"argument {node.arg!r}"
    elif isinstance(node, ast.Constant) and not isinstance(node.value, (int, str, bytes, type(None))):
        return f"constant {node.value!r}"
    return None


def audit(source: str) -> None:
    """Refuse generated source that could reach anything but the engine's own objects: one
    function, names and attributes from `names`, no nested definitions, no imports.

    Raises ProgramLoadError naming the first offence. It can only fail on a bug in code
    generation or on JSON that slipped past validation."""
    tree = ast.parse(source)
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.FunctionDef):
        raise ProgramLoadError("internal: generated code is not exactly one function")
    fn = tree.body[0]
    if fn.decorator_list or fn.returns or not _FRESH.match(fn.name):
        raise ProgramLoadError("internal: generated function has a bad header")
    for node in ast.walk(fn):
        if node is fn:
            continue
        bad = "nested function" if isinstance(node, ast.FunctionDef) else _offence(node, fn.name)
        if bad is not None:
            line = getattr(node, "lineno", 0)
            text = source.splitlines()[line - 1].strip() if line else ""
            raise ProgramLoadError(f"internal: generated code uses {bad}: {text[:120]}")


class Namespace:
    """The globals generated functions of one program run in: helpers, layout tables, constants."""

    def __init__(self) -> None:
        self.ns: dict[str, Any] = {"__builtins__": names.SAFE_BUILTINS, **names.HELPERS}
        self._counter = 0

    def __setitem__(self, name: str, value: Any) -> None:
        if name not in names.GLOBALS:
            raise ProgramLoadError(f"internal: {name!r} is not a name of generated code")
        self.ns[name] = value

    def __getitem__(self, name: str) -> Any:
        return self.ns[name]

    def fresh(self, kind: str) -> str:
        """A new symbol `_<kind><n>`; `kind` is one of the engine's own words, never JSON text."""
        if not _KIND.match(kind):
            raise ProgramLoadError(f"internal: bad symbol kind {kind!r}")
        self._counter += 1
        return f"_{kind}{self._counter}"

    def const(self, kind: str, value: Any) -> str:
        """A fresh symbol bound to `value` (an object the code uses as data)."""
        sym = self.fresh(kind)
        self.ns[sym] = value
        return sym

    def compile_fn(self, kind: str, args: str, body: list[str]) -> Callable:
        """Compile `def <fresh symbol>(args): body` after auditing it; returns the function."""
        name = self.fresh(kind)
        src = [f"def {name}({args}):", "    " + names.PROLOGUE]
        src += ["    " + line for line in body]
        code = "\n".join(src)
        try:
            audit(code)
            exec(compile(code, f"<p4:{name}>", "exec"), self.ns)  # audited source, see module doc
        except SyntaxError as exc:  # a bug in code generation
            raise ProgramLoadError(f"internal: cannot compile {name}: {exc}") from None
        return self.ns[name]
