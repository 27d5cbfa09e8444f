"""Program-wide declarations: named types resolved to `types.P4Type`, constants evaluated,
errors and match kinds numbered, blocks and actions indexed by name."""
from __future__ import annotations

import re
from typing import Any, Callable

from p4target.compiler import ast
from p4target.compiler.types import (Bits, Bool, EnumT, ErrorT, ExternT, HeaderT, InfInt, MatchKindT,
                                     NewType, P4Type, StackT, StringT, StructLike, StructT, Translation,
                                     TupleT, UnionT, VarbitT, VoidT, BlockT)
from p4target.errors import CompileError, UnsupportedError


def fail(node: Any, message: str) -> CompileError:
    return CompileError.at(getattr(node, "loc", None), message)


class ProgramScope:
    """Every top-level declaration of a program, by kind and name."""

    def __init__(self, program: ast.Program) -> None:
        self.program = program
        self.type_decls: dict[str, ast.Declaration] = {}
        self.resolved: dict[str, P4Type] = {}
        self.consts: dict[str, tuple[Any, P4Type]] = {}
        self.errors: dict[str, int] = {}
        self.match_kinds: list[str] = []
        self.actions: dict[str, ast.ActionDecl] = {}
        self.controls: dict[str, ast.ControlDecl] = {}
        self.parsers: dict[str, ast.ParserDecl] = {}
        self.externs: dict[str, ast.ExternDecl] = {}
        self.extern_functions: dict[str, list[ast.ExternFunctionDecl]] = {}
        self.functions: dict[str, ast.FunctionDecl] = {}
        self.instances: dict[str, ast.InstantiationDecl] = {}
        self.new_types: dict[str, NewType] = {}  # ``type`` declarations resolved so far
        self._resolving: set[str] = set()
        for decl in program.declarations:
            self._declare(decl)

    # ------------------------------------------------------------------ declarations
    def _declare(self, d: ast.Declaration) -> None:
        if isinstance(d, ast.ErrorDecl):
            for m in d.members:
                self.errors.setdefault(m.name, len(self.errors))
        elif isinstance(d, ast.MatchKindDecl):
            self.match_kinds += [m.name for m in d.members]
        elif isinstance(d, (ast.HeaderDecl, ast.StructDecl, ast.HeaderUnionDecl, ast.EnumDecl,
                            ast.TypedefDecl, ast.NewTypeDecl, ast.ParserTypeDecl,
                            ast.ControlTypeDecl, ast.PackageTypeDecl)):
            self.type_decls[d.name] = d
            if isinstance(d, ast.NewTypeDecl):
                self.resolve_name(d.name, d)  # checked where declared, used or not, as p4c does
        elif isinstance(d, ast.ExternDecl):
            self.externs[d.name] = d
            self.type_decls[d.name] = d
        elif isinstance(d, ast.ExternFunctionDecl):
            self.extern_functions.setdefault(d.name, []).append(d)
        elif isinstance(d, ast.FunctionDecl):
            self.functions[d.name] = d
        elif isinstance(d, ast.ActionDecl):
            self.actions[d.name] = d
        elif isinstance(d, ast.ControlDecl):
            self.controls[d.name] = d
            self.type_decls.setdefault(d.name, d)
        elif isinstance(d, ast.ParserDecl):
            self.parsers[d.name] = d
            self.type_decls.setdefault(d.name, d)
        elif isinstance(d, ast.ConstDecl):
            t = self.resolve(d.type)
            value = self.const_eval(d.value, lambda name: None, t)
            self.consts[d.name] = (value, t)
        elif isinstance(d, ast.InstantiationDecl):
            self.instances[d.name] = d
        elif isinstance(d, (ast.ValueSetDecl, ast.VariableDecl)):
            raise UnsupportedError.at(d.loc, "top-level " + type(d).__name__)

    # ------------------------------------------------------------------ types
    def resolve(self, t: ast.Type, params: dict[str, P4Type] | None = None) -> P4Type:
        """The resolved type of a type node (``params`` binds type parameters)."""
        if isinstance(t, ast.BitType):
            width = self.const_eval(t.width, lambda n: None)
            return Bits(int(width), t.signed)
        if isinstance(t, ast.VarbitType):
            return VarbitT(int(self.const_eval(t.width, lambda n: None)))
        if isinstance(t, ast.BoolType):
            return Bool()
        if isinstance(t, ast.IntType):
            return InfInt()
        if isinstance(t, ast.ErrorType):
            return ErrorT()
        if isinstance(t, ast.StringType):
            return StringT()
        if isinstance(t, ast.VoidType):
            return VoidT()
        if isinstance(t, ast.MatchKindType):
            return MatchKindT()
        if isinstance(t, ast.HeaderStackType):
            elem = self.resolve(t.element, params)
            if not isinstance(elem, (HeaderT, UnionT)):
                raise fail(t, f"stack elements must be headers or header unions, not {elem}")
            return StackT(elem, int(self.const_eval(t.size, lambda n: None)))
        if isinstance(t, ast.TupleType):
            return TupleT([self.resolve(e, params) for e in t.elements])
        if isinstance(t, ast.SpecializedType):
            base = self.resolve_name(t.base.name, t.base, params)
            if isinstance(base, ExternT):
                return ExternT(base.name, base.decl, [self.resolve(a, params) for a in t.args])
            return base
        if isinstance(t, ast.TypeName):
            return self.resolve_name(t.name, t, params)
        if isinstance(t, ast.DontCareType):
            return InfInt()
        raise UnsupportedError.at(t.loc, f"type {type(t).__name__}")

    def resolve_name(self, name: str, node: Any, params: dict[str, P4Type] | None = None) -> P4Type:
        if params and name in params:
            return params[name]
        if name in self.resolved:
            return self.resolved[name]
        d = self.type_decls.get(name)
        if d is None:
            raise fail(node, f"unknown type '{name}'")
        if name in self._resolving:
            raise fail(node, f"recursive type '{name}'")
        self._resolving.add(name)
        try:
            if isinstance(d, ast.TypedefDecl):
                out = self.resolve(d.type)
            elif isinstance(d, ast.NewTypeDecl):
                out = self._new_type(d)
            elif isinstance(d, ast.HeaderDecl):
                out = HeaderT(name, [], {}, d.annotations)
                self.resolved[name] = out
                out.fields.extend((f.name, self.resolve(f.type)) for f in d.fields)
                out.field_annotations.update({f.name: f.annotations for f in d.fields})
                if any(isinstance(ft, StructT) for _, ft in out.fields):
                    _flatten_header(out)
                for fname, ft in out.fields:
                    if not isinstance(ft, (Bits, Bool, VarbitT, EnumT)):
                        raise fail(d, f"header field '{name}.{fname}' must be bit<>, int<>, bool, "
                                      f"varbit<> or a serializable enum, not {ft}")
                if not any(isinstance(ft, VarbitT) for _, ft in out.fields) and out.width() % 8:
                    raise fail(d, f"header '{name}' has fields totaling {out.width()} bits: BMv2 "
                                  "needs headers a whole number of bytes long (a multiple of 8 bits)")
            elif isinstance(d, ast.StructDecl):
                out = StructT(name, [], {}, d.annotations)
                self.resolved[name] = out
                out.fields.extend((f.name, self.resolve(f.type)) for f in d.fields)
                out.field_annotations.update({f.name: f.annotations for f in d.fields})
            elif isinstance(d, ast.HeaderUnionDecl):
                out = UnionT(name, [], {}, d.annotations)
                self.resolved[name] = out
                out.fields.extend((f.name, self.resolve(f.type)) for f in d.fields)
            elif isinstance(d, ast.EnumDecl):
                if d.underlying is not None:
                    under = self.resolve(d.underlying)
                    if not isinstance(under, Bits):
                        raise fail(d, f"enum '{name}' must be over bit<> or int<>")
                    members = {m.name: int(self.const_eval(m.value, lambda n: None, under))
                               for m in d.members}
                    out = EnumT(name, members, under)
                else:
                    out = EnumT(name, {m.name: i for i, m in enumerate(d.members)})
            elif isinstance(d, ast.ExternDecl):
                out = ExternT(name, d)
            else:
                out = BlockT(name, d)
        finally:
            self._resolving.discard(name)
        self.resolved[name] = out
        return out

    def _new_type(self, d: ast.NewTypeDecl) -> P4Type:
        """``type T NAME``: values keep NAME (P4Info ``type_name``); the declaration is recorded
        with its ``@p4runtime_translation``, which P4Runtime allows on bit<W>/int<W> only."""
        under = self.resolve(d.type)
        translation = p4runtime_translation(d.annotations)
        if translation is not None and not isinstance(under, Bits):
            raise fail(d, f"'{d.name}': P4Runtime requires the underlying type of a type with the "
                          f"@p4runtime_translation annotation to be bit<W>; it cannot be '{under}'")
        self.new_types[d.name] = NewType(d.name, under, translation, tuple(d.annotations))
        if isinstance(under, Bits):
            return Bits(under.width, under.signed, new_type=d.name)
        if isinstance(under, Bool):
            return Bool(new_type=d.name)
        return under

    # ------------------------------------------------------------------ constants
    def const_eval(self, e: ast.Expression, lookup: Callable[[str], Any],
                   expected: P4Type | None = None) -> Any:
        """Evaluate a compile-time expression to an int or bool (enum/error members to ints).

        ``lookup(name)`` gives local constants first (None when unknown)."""
        v = self._eval(e, lookup)
        if isinstance(expected, Bits) and isinstance(v, int) and not isinstance(v, bool):
            v = _wrap(v, expected)
        return v

    def _eval(self, e: ast.Expression, lookup: Callable[[str], Any]) -> Any:
        return self._typed_eval(e, lookup)[0]

    def _typed_eval(self, e: ast.Expression, lookup: Callable[[str], Any]) -> tuple[Any, Bits | None]:
        """A constant's value and, when it has one, its fixed-width type (``bit<W>``/``int<W>``,
        also through a ``typedef`` or ``type``): arithmetic on it wraps at that width."""
        if isinstance(e, ast.IntLiteral):
            if e.width is not None:
                t = Bits(e.width, e.signed)
                return _wrap(e.value, t), t
            return e.value, None
        if isinstance(e, ast.BoolLiteral):
            return e.value, None
        if isinstance(e, ast.StringLiteral):
            return e.value, None
        if isinstance(e, ast.PathExpression):
            local = lookup(e.name)
            if local is not None:
                return local, None
            if e.name in self.consts:
                value, t = self.consts[e.name]
                return value, t if isinstance(t, Bits) else None
            raise fail(e, f"'{e.name}' is not a compile-time constant")
        if isinstance(e, ast.MemberExpression):
            if isinstance(e.expr, ast.PathExpression):
                if e.expr.name == "error" and e.member in self.errors:
                    return self.errors[e.member], None
                t = self.type_decls.get(e.expr.name)
                if isinstance(t, ast.EnumDecl):
                    enum = self.resolve_name(e.expr.name, e)
                    if e.member in enum.members:
                        return enum.members[e.member], None
            raise fail(e, "expression is not a compile-time constant")
        if isinstance(e, ast.CastExpression):
            v = self._eval(e.expr, lookup)
            t = self.resolve(e.type)
            if isinstance(t, Bits):
                return _wrap(int(v), t), t
            if isinstance(t, Bool):
                return bool(v), None
            return v, None
        if isinstance(e, ast.UnaryExpression):
            v, t = self._typed_eval(e.operand, lookup)
            r = {"-": lambda: -v, "+": lambda: v, "!": lambda: not v, "~": lambda: ~v}[e.op]()
            return (_wrap(r, t), t) if t is not None and e.op != "!" else (r, t)
        if isinstance(e, ast.BinaryExpression):
            a, ta = self._typed_eval(e.left, lookup)
            b, tb = self._typed_eval(e.right, lookup)
            if e.op in _RELATIONS:
                return _binop(e.op, a, b, e), None
            # an unsized operand takes the other's type; a shift has its left operand's type
            t = ta if e.op in ("<<", ">>") else (ta or tb)
            if t is not None and e.op in ("|+|", "|-|"):
                return _saturate(a + b if e.op == "|+|" else a - b, t), t
            r = _binop(e.op, a, b, e)
            if t is not None and isinstance(r, int) and not isinstance(r, bool):
                r = _wrap(r, t)
            return r, t
        if isinstance(e, ast.TernaryExpression):
            return self._typed_eval(e.then if self._eval(e.condition, lookup) else e.otherwise, lookup)
        if isinstance(e, ast.SliceExpression):
            v = self._eval(e.expr, lookup)
            hi, lo = int(self._eval(e.high, lookup)), int(self._eval(e.low, lookup))
            if isinstance(v, bool) or not isinstance(v, int) or not 0 <= lo <= hi:
                raise fail(e, "expression is not a compile-time constant")
            t = Bits(hi - lo + 1)
            return (v >> lo) & ((1 << t.width) - 1), t
        raise fail(e, "expression is not a compile-time constant")


_RELATIONS = ("==", "!=", "<", ">", "<=", ">=", "&&", "||")


_TRANSLATION_RE = re.compile(r'^\s*"((?:[^"\\]|\\.)*)"\s*,\s*'
                             r'(?:(string)|bit\s*<\s*(0[xX][0-9a-fA-F]+|\d+)\s*>|(0[xX][0-9a-fA-F]+|\d+))\s*$')


def p4runtime_translation(annotations: Any) -> Translation | None:
    """The ``@p4runtime_translation("URI", bit<W> | W | string)`` among ``annotations``, parsed
    as p4c's annotation grammar accepts it (CompileError for any other argument form)."""
    ann = ast.find_annotation(annotations, "p4runtime_translation")
    if ann is None:
        return None
    m = _TRANSLATION_RE.match(ann.raw or "")
    if m is None:
        raise fail(ann, '@p4runtime_translation takes a URI string and a controller type: '
                        '("URI", bit<W>), ("URI", W) or ("URI", string)')
    uri = re.sub(r"\\(.)", r"\1", m.group(1))
    width = m.group(3) or m.group(4)
    return Translation(uri, None if m.group(2) else int(width, 0))


def _flatten_header(h: HeaderT) -> None:
    """Store a header with struct fields flat (p4c's names: ``_a0``, ``_row_alt0_valid1``...)."""
    flat: list[tuple[str, P4Type]] = []

    def walk(path: str, t: P4Type) -> Any:
        if isinstance(t, StructT):
            return (t, {m: walk(f"{path}_{m}", mt) for m, mt in t.fields})
        fname = f"_{path}{len(flat)}"
        flat.append((fname, t))
        return fname

    renamed = {f: walk(f, ft) for f, ft in h.fields}
    h.fields[:] = flat
    h.renamed = renamed


def _wrap(v: int, t: Bits) -> int:
    v &= (1 << t.width) - 1
    if t.signed and v >> (t.width - 1):
        v -= 1 << t.width
    return v


def _saturate(v: int, t: Bits) -> int:
    lo, hi = (-(1 << (t.width - 1)), (1 << (t.width - 1)) - 1) if t.signed else (0, (1 << t.width) - 1)
    return min(max(v, lo), hi)


def _binop(op: str, a: Any, b: Any, node: Any) -> Any:
    try:
        return {
            "+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b,
            "/": lambda: a // b, "%": lambda: a % b, "<<": lambda: a << b, ">>": lambda: a >> b,
            "&": lambda: a & b, "|": lambda: a | b, "^": lambda: a ^ b,
            "==": lambda: a == b, "!=": lambda: a != b, "<": lambda: a < b, ">": lambda: a > b,
            "<=": lambda: a <= b, ">=": lambda: a >= b, "&&": lambda: a and b, "||": lambda: a or b,
            "|+|": lambda: a + b, "|-|": lambda: max(a - b, 0),
        }[op]()
    except KeyError:
        raise fail(node, f"operator '{op}' is not allowed in a constant") from None
    except ZeroDivisionError:
        raise fail(node, "division by zero in a constant") from None


def is_struct_like(t: P4Type) -> bool:
    return isinstance(t, StructLike)
