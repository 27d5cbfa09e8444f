"""Turning generated Python source into functions, safely.

The engine compiles each program's expressions and action bodies into Python source once, so
the per-packet path never looks at the JSON again. A pipeline is data, never code: every value
from the JSON reaches the source only as a validated integer (`int_literal`), a `repr()` of a
validated string (`str_literal`), or a symbol of the namespace the code runs in (`Namespace.const`).
As a second line, `Namespace.compile_fn` audits each function before it runs: only names the
engine defines (plus the function's own locals and a few pure builtins), only the attributes the
engine's code uses, nothing spelled with a double underscore, no imports, and the code runs
without the real builtins.
"""
from __future__ import annotations

import ast
import re
from typing import Any, Callable

from .errors import ProgramLoadError

# builtins the generated code calls; `__import__`, `open`, `eval`... are not among them
SAFE_BUILTINS: dict[str, Any] = {"any": any, "max": max, "min": min, "len": len, "sum": sum,
                                 "range": range, "enumerate": enumerate, "int": int}

# attributes generated code reads or calls: PacketState fields, runtime objects' methods
ALLOWED_ATTRIBUTES = frozenset({
    # PacketState
    "F", "V", "NX", "VL", "data", "off", "length", "length_reg", "clone", "resubmit", "recirc",
    "digests", "truncate", "now_us", "logs",
    # runtime objects (counters, meters, registers, value sets) and plain data methods
    "count", "execute", "values", "size", "mask", "matches", "get", "pop", "append",
    "from_bytes", "to_bytes", "join",
})

_ALLOWED_NODES = (
    ast.Module, ast.FunctionDef, ast.arguments, ast.arg, ast.Return, ast.Assign, ast.AugAssign,
    ast.If, ast.While, ast.Break, ast.Pass, ast.Raise, ast.Expr, ast.BoolOp, ast.BinOp, ast.UnaryOp,
    ast.IfExp, ast.Compare, ast.Call, ast.Constant, ast.Attribute, ast.Subscript, ast.Slice,
    ast.Name, ast.List, ast.Tuple, ast.ListComp, ast.GeneratorExp, ast.comprehension, ast.For,
    ast.Load, ast.Store, ast.And, ast.Or, ast.Add, ast.Sub, ast.Mult, ast.FloorDiv,
    ast.Mod, ast.LShift, ast.RShift, ast.BitOr, ast.BitXor, ast.BitAnd, ast.Invert, ast.Not,
    ast.USub, ast.UAdd, ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.keyword,
)

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


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


def audit(source: str) -> None:
    """Refuse generated source that could reach anything but the engine's own objects.

    Raises ProgramLoadError naming the first offending construct. Called on every function the
    engine compiles; it can only fail on a bug in code generation or on JSON that slipped past
    validation, so the message quotes the source line."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        bad = None
        if not isinstance(node, _ALLOWED_NODES):
            bad = f"construct {type(node).__name__}"
        elif isinstance(node, ast.Name) and "__" in node.id:
            bad = f"name {node.id!r}"
        elif isinstance(node, ast.Attribute) and node.attr not in ALLOWED_ATTRIBUTES:
            bad = f"attribute {node.attr!r}"
        elif isinstance(node, ast.FunctionDef) and node is not tree.body[0]:
            bad = "nested function"
        elif isinstance(node, ast.Constant) and not isinstance(node.value, (int, str, bytes, type(None))):
            bad = f"constant {node.value!r}"
        if bad is not None:
            line = getattr(node, "lineno", 0)
            text = source.splitlines()[line - 1].strip() if line else ""
            raise ProgramLoadError(f"internal: generated code uses {bad}: {text[:120]}")


class Namespace:
    """The globals generated functions run in: engine helpers, layout tables, constants."""

    def __init__(self, helpers: dict[str, Any]) -> None:
        self.ns: dict[str, Any] = {"__builtins__": SAFE_BUILTINS, **helpers}
        self._counter = 0

    def __setitem__(self, name: str, value: Any) -> None:
        self.ns[name] = value

    def __getitem__(self, name: str) -> Any:
        return self.ns[name]

    def __contains__(self, name: str) -> bool:
        return name in self.ns

    def fresh(self, kind: str) -> str:
        """A new symbol `_<kind><n>`; `kind` is one of the engine's own words, never JSON text."""
        if not _IDENTIFIER.match(kind):
            raise ProgramLoadError(f"internal: bad symbol kind {kind!r}")
        self._counter += 1
        return f"_{kind}{self._counter}"

    def const(self, kind: str, value: Any) -> str:
        """A symbol bound to `value` (an object the code uses as data)."""
        sym = self.fresh(kind)
        self.ns[sym] = value
        return sym

    def compile_fn(self, kind: str, args: str, body: list[str]) -> Callable:
        """Compile `def <fresh symbol>(args): body` after auditing it; returns the function."""
        name = self.fresh(kind)
        src = [f"def {name}({args}):", "    F = P.F; V = P.V; NX = P.NX"]
        src += ["    " + line for line in body] or ["    pass"]
        code = "\n".join(src)
        try:
            audit(code)
            exec(compile(code, f"<p4:{name}>", "exec"), self.ns)  # audited source, see module doc
        except SyntaxError as exc:  # a bug in code generation, reported with the source
            raise ProgramLoadError(f"internal: cannot compile {name}: {exc}") from None
        return self.ns[name]
