"""Lowering of P4 expressions to BMv2 JSON expressions, with the typing they need.

Convention: a ``bool``-typed expression always lowers to BMv2's boolean form (comparisons,
``d2b(field)``, ``{"type": "bool"}``); storing one in a field goes through ``b2d``. Arithmetic
results are brought back to their width (``&`` mask, ``two_comp_mod`` for ``int<W>``) as p4c does.
"""
from __future__ import annotations

from typing import Any

from p4target.compiler import ast
from p4target.compiler.bmv2_json import expr, hexstr
from p4target.compiler.semantics import ProgramScope, fail
from p4target.compiler.types import (Bits, Bool, EnumT, ErrorT, HeaderT, InfInt, P4Type, StackT,
                                     StringT, StructLike, StructT, UnionT, bit_width)
from p4target.compiler.values import (ConstValue, DynamicStackElement, DynamicStackField, ExprValue, FieldValue,
                                      HeaderValue, RuntimeDataValue, StackLastValue, StackValue,
                                      StructValue, TypeValue, UnionValue, Value)
from p4target.errors import UnsupportedError

COMPARISONS = ("==", "!=", "<", ">", "<=", ">=")
_PLACE_SHAPES = (ast.PathExpression, ast.MemberExpression, ast.IndexExpression)


class Env:
    """A chain of name -> Value scopes."""

    def __init__(self, parent: "Env" | None = None, names: dict[str, Value] | None = None) -> None:
        self.parent = parent
        self.names: dict[str, Value] = dict(names or {})

    def lookup(self, name: str) -> Value | None:
        env: Env | None = self
        while env is not None:
            if name in env.names:
                return env.names[name]
            env = env.parent
        return None

    def child(self, names: dict[str, Value] | None = None) -> "Env":
        return Env(self, names)

    def define(self, name: str, value: Value) -> None:
        self.names[name] = value


def scalar_type(t: P4Type) -> P4Type:
    """The type as stored: serializable enums are their underlying bits."""
    if isinstance(t, EnumT) and t.underlying is not None:
        return t.underlying
    return t


def fit(json: dict, t: P4Type) -> dict:
    """Bring an arithmetic result back into ``t``'s width."""
    t = scalar_type(t)
    if isinstance(t, Bits):
        if t.signed:
            return expr("two_comp_mod", json, hexstr(t.width))
        return expr("&", json, hexstr((1 << t.width) - 1))
    return json


def to_data(json: dict, t: P4Type) -> dict:
    """A value in data form (bool expressions become 0/1)."""
    if isinstance(t, Bool):
        if json.get("type") == "bool":
            return hexstr(1 if json["value"] else 0)
        return expr("b2d", None, json)
    return json


class ExpressionLowering:
    """Lowers expressions in one environment; ``temps`` receives side computations."""

    def __init__(self, scope: ProgramScope, env: Env, in_parser: bool = False) -> None:
        self.scope = scope
        self.env = env
        self.in_parser = in_parser
        # parser ``verify`` primitives that must run before the expressions lowered so far
        self.bounds_checks: list[dict] = []

    # ------------------------------------------------------------------ values
    def value_of(self, e: ast.Expression) -> Value:
        """What a path / member / index expression denotes."""
        if isinstance(e, ast.PathExpression):
            v = self.env.lookup(e.name)
            if v is not None:
                return v
            if e.name in self.scope.consts:
                value, t = self.scope.consts[e.name]
                return ConstValue(value, t)
            if e.name == "error":
                return TypeValue(ErrorT())
            if e.name in self.scope.type_decls:
                return TypeValue(self.scope.resolve_name(e.name, e))
            raise fail(e, f"unknown name '{e.name}'")
        if isinstance(e, ast.TypeExpression):
            if isinstance(e.type, ast.ErrorType):
                return TypeValue(ErrorT())
            return TypeValue(self.scope.resolve(e.type))
        if isinstance(e, ast.MemberExpression):
            if _is_lookahead(e.expr):
                return ExprValue(*self._lookahead_field(e))
            return self.member(self.value_of(e.expr), e.member, e)
        if isinstance(e, ast.IndexExpression):
            base = self.value_of(e.expr)
            if isinstance(base, StructValue) and base.type.name.startswith("tuple<"):
                # a tuple variable (stored as members f0, f1, ...): constant index only
                i = int(self.scope.const_eval(e.index, self._const_lookup))
                if not 0 <= i < len(base.members):
                    raise fail(e, f"tuple index {i} out of range")
                return base.members[f"f{i}"]
            if not isinstance(base, StackValue):
                raise fail(e, "only header stacks and tuples can be indexed")
            try:
                i = self.scope.const_eval(e.index, self._const_lookup)
            except Exception:
                if base.unions is not None:
                    raise UnsupportedError.at(e.loc, "run-time index into a stack of header unions")
                idx, _ = self.lower(e.index, Bits(32))
                return DynamicStackElement(base, idx)
            if not 0 <= int(i) < len(base.elements):
                raise fail(e, f"index {i} out of range for stack of size {len(base.elements)}")
            if base.unions is not None:
                return base.unions[int(i)]
            return HeaderValue(base.elements[int(i)], base.type.element)
        j, t = self.lower(e)
        return ExprValue(j, t)

    def _const_lookup(self, name: str) -> Any:
        v = self.env.lookup(name)
        if isinstance(v, ConstValue):
            return v.value
        return None

    def member(self, base: Value, name: str, node: Any) -> Value:
        if isinstance(base, TypeValue):
            t = base.type
            if isinstance(t, ErrorT):
                if name not in self.scope.errors:
                    raise fail(node, f"unknown error '{name}'")
                return ConstValue(self.scope.errors[name], ErrorT())
            if isinstance(t, EnumT):
                if name not in t.members:
                    raise fail(node, f"enum '{t.name}' has no member '{name}'")
                return ConstValue(t.members[name], t)
            raise fail(node, f"type '{t}' has no member '{name}'")
        if isinstance(base, HeaderValue):
            f = base.field(name)
            if f is None:
                raise fail(node, f"'{base.type.name}' has no field '{name}'")
            return f
        if isinstance(base, StructValue):
            if name not in base.members:
                raise fail(node, f"'{base.type.name}' has no field '{name}'")
            return base.members[name]
        if isinstance(base, UnionValue):
            if name not in base.members:
                raise fail(node, f"union '{base.type.name}' has no member '{name}'")
            return base.members[name]
        if isinstance(base, StackValue):
            if name == "last":
                return StackLastValue(base)
            if name == "lastIndex":
                return ExprValue(expr("last_stack_index", None, {"type": "header_stack", "value": base.name}),
                                 Bits(32))
            if name == "size":
                return ConstValue(len(base.elements), Bits(32))
            if name == "nextIndex":
                return ExprValue(expr("size_stack", None, {"type": "header_stack", "value": base.name}),
                                 Bits(32))
            if name == "next" and self.in_parser and base.unions is None:
                # read as a value: the element at nextIndex (extract handles `.next` itself)
                return DynamicStackElement(base, expr("size_stack", None,
                                                      {"type": "header_stack", "value": base.name}),
                                           parser_next=True)
            raise fail(node, f"header stack has no member '{name}'")
        if isinstance(base, StackLastValue):
            ftype = base.stack.type.element.field_type(name)
            if ftype is None:
                raise fail(node, f"'{base.stack.type.element.name}' has no field '{name}'")
            if self.in_parser:
                return ExprValue({"type": "stack_field", "value": [base.stack.name, name]}, ftype)
            last = expr("last_stack_index", None, {"type": "header_stack", "value": base.stack.name})
            return DynamicStackField(self._dyn_field(base.stack, last, name), ftype, base.stack, last, name)
        if isinstance(base, DynamicStackElement):
            self._check_next(base)
            ftype = base.stack.type.element.field_type(name)
            if ftype is None:
                raise fail(node, f"'{base.stack.type.element.name}' has no field '{name}'")
            return DynamicStackField(self._dyn_field(base.stack, base.index_json, name), ftype,
                                     base.stack, base.index_json, name)
        raise fail(node, f"cannot take member '{name}' here")

    def _check_next(self, element: DynamicStackElement) -> None:
        """A parser reading ``stack.next`` when every element is filled signals
        ``error.StackOutOfBounds`` (P4_16 spec): queue a ``verify`` on ``nextIndex < size``."""
        code = self.scope.errors.get("StackOutOfBounds")
        if not element.parser_next or code is None:
            return
        size = len(element.stack.elements)
        check = {"op": "verify", "parameters": [expr("<", element.index_json, hexstr(size)), hexstr(code)]}
        if check not in self.bounds_checks:
            self.bounds_checks.append(check)

    def take_bounds_checks(self) -> list[dict]:
        """The queued bounds checks (emptied)."""
        checks, self.bounds_checks = self.bounds_checks, []
        return checks

    @staticmethod
    def _dyn_field(stack: StackValue, index: dict, name: str) -> dict:
        offset = [f for f, _ in stack.type.element.fields].index(name)
        deref = expr("dereference_header_stack", {"type": "header_stack", "value": stack.name}, index)
        return expr("access_field", deref, hexstr(offset))

    def rvalue(self, v: Value, node: Any, expected: P4Type | None = None) -> tuple[dict, P4Type]:
        """A scalar value as a BMv2 expression."""
        if isinstance(v, FieldValue):
            j = v.json()
            return (expr("d2b", None, j), v.type) if isinstance(v.type, Bool) else (j, v.type)
        if isinstance(v, ConstValue):
            return self.const_json(v.value, v.type, expected, node)
        if isinstance(v, RuntimeDataValue):
            # "local" inside expressions; as a primitive's argument the JSON writer makes it
            # "runtime_data" (BMv2 reads action data under those two names)
            j = {"type": "local", "value": v.index}
            return (expr("d2b", None, j), v.type) if isinstance(v.type, Bool) else (j, v.type)
        if isinstance(v, DynamicStackField):
            chain = by_index(v.index_json, v.element_fields(), hexstr(0))
            return (expr("d2b", None, chain), v.type) if isinstance(v.type, Bool) else (chain, v.type)
        if isinstance(v, ExprValue):
            if isinstance(v.type, Bool) and v.json.get("type") in ("field", "local", "stack_field"):
                return expr("d2b", None, v.json), v.type
            return v.json, v.type
        raise fail(node, "expression is not a scalar value")

    def const_json(self, value: Any, t: P4Type, expected: P4Type | None, node: Any) -> tuple[dict, P4Type]:
        if isinstance(t, Bool) or isinstance(value, bool):
            return {"type": "bool", "value": bool(value)}, Bool()
        if isinstance(value, str):
            return {"type": "string", "value": value}, StringT()
        if isinstance(t, InfInt) and isinstance(scalar_type(expected), Bits):
            t = expected
        st = scalar_type(t)
        if isinstance(st, Bits):
            v = int(value) & ((1 << st.width) - 1)
            if st.signed and v >> (st.width - 1):
                v -= 1 << st.width
            return hexstr(v), t
        return hexstr(int(value)), t

    # ------------------------------------------------------------------ expressions
    def lower_bool(self, e: ast.Expression) -> dict:
        j, t = self.lower(e, Bool())
        if not isinstance(t, Bool):
            raise fail(e, f"condition must be bool, not {t}")
        return j

    def lower(self, e: ast.Expression, expected: P4Type | None = None) -> tuple[dict, P4Type]:
        """(BMv2 expression, type) of ``e``; ``expected`` types unsized literals."""
        if isinstance(e, ast.IntLiteral):
            if e.width is not None:
                return self.const_json(e.value, Bits(e.width, e.signed), None, e)
            return self.const_json(e.value, InfInt(), expected, e)
        if isinstance(e, ast.BoolLiteral):
            return {"type": "bool", "value": e.value}, Bool()
        if isinstance(e, ast.StringLiteral):
            return {"type": "string", "value": e.value}, StringT()
        if isinstance(e, (ast.PathExpression, ast.MemberExpression, ast.IndexExpression, ast.TypeExpression)):
            return self.rvalue(self.value_of(e), e, expected)
        if isinstance(e, ast.SliceExpression):
            base, bt = self.lower(e.expr)
            hi = int(self.scope.const_eval(e.high, self._const_lookup))
            lo = int(self.scope.const_eval(e.low, self._const_lookup))
            st = scalar_type(bt)
            if not isinstance(st, Bits) or not (0 <= lo <= hi < st.width):
                raise fail(e, f"bad slice [{hi}:{lo}] of {bt}")
            shifted = expr(">>", base, hexstr(lo)) if lo else base
            return expr("&", shifted, hexstr((1 << (hi - lo + 1)) - 1)), Bits(hi - lo + 1)
        if isinstance(e, ast.UnaryExpression):
            return self._unary(e, expected)
        if isinstance(e, ast.BinaryExpression):
            return self._binary(e, expected)
        if isinstance(e, ast.TernaryExpression):
            cond = self.lower_bool(e.condition)
            a, at, b, bt = self._typed_pair(e.then, e.otherwise, expected)
            if isinstance(at, InfInt) and isinstance(bt, InfInt) and cond.get("type") != "bool":
                raise fail(e, "width must be given for one of the ?: arms: with both unsized, the "
                              "condition must be known at compile time")
            if isinstance(at, InfInt) and isinstance(bt, InfInt) and expected is not None:
                (a, at), (b, bt) = self.lower(e.then, expected), self.lower(e.otherwise, expected)
            if isinstance(at, Bool):
                return expr("d2b", None, expr("?", to_data(a, at), to_data(b, bt), cond=cond)), Bool()
            return expr("?", a, b, cond=cond), at
        if isinstance(e, ast.CastExpression):
            return self._cast(e)
        if isinstance(e, ast.MethodCallExpression):
            return self._call(e, expected)
        raise UnsupportedError.at(e.loc, f"expression {type(e).__name__} here")

    def _unary(self, e: ast.UnaryExpression, expected: P4Type | None) -> tuple[dict, P4Type]:
        if e.op == "!":
            return expr("not", None, self.lower_bool(e.operand)), Bool()
        j, t = self.lower(e.operand, expected)
        if e.op == "+":
            return j, t
        if isinstance(t, InfInt) and j.get("type") == "hexstr":
            v = int(j["value"], 16)
            return hexstr(-v if e.op == "-" else ~v), t
        if e.op == "~":
            return fit(expr("~", None, j), t), t
        if e.op == "-":
            return fit(expr("-", None, j), t), t
        raise fail(e, f"unknown operator '{e.op}'")

    def _operands(self, e: ast.BinaryExpression, expected: P4Type | None) -> tuple[dict, P4Type, dict, P4Type]:
        return self._typed_pair(e.left, e.right, expected if e.op not in COMPARISONS else None)

    def _typed_pair(self, left: ast.Expression, right: ast.Expression,
                    expected: P4Type | None) -> tuple[dict, P4Type, dict, P4Type]:
        """Two operands of one type: an unsized literal takes the other operand's type, and
        only when both are unsized the context's (``(bit<8>)(4 / 1w1)`` divides in bit<1>)."""
        a, at = self.lower(left)
        b, bt = self.lower(right, None if isinstance(at, InfInt) else at)
        if isinstance(at, InfInt) and not isinstance(bt, InfInt):
            a, at = self.lower(left, bt)
        elif isinstance(at, InfInt) and isinstance(bt, InfInt) and expected is not None and \
                not (a.get("type") == "hexstr" and b.get("type") == "hexstr"):
            a, at = self.lower(left, expected)
            b, bt = self.lower(right, expected)
        return a, at, b, bt

    def _binary(self, e: ast.BinaryExpression, expected: P4Type | None) -> tuple[dict, P4Type]:
        op = e.op
        if op in ("&&", "||"):
            return expr("and" if op == "&&" else "or", self.lower_bool(e.left), self.lower_bool(e.right)), Bool()
        if op in ("<<", ">>"):
            a, at = self.lower(e.left, expected)
            b, _ = self.lower(e.right, Bits(32))
            if isinstance(at, InfInt) and a.get("type") == "hexstr" and b.get("type") == "hexstr":
                x, y = int(a["value"], 16), int(b["value"], 16)
                return hexstr(x << y if op == "<<" else x >> y), at
            j = expr(op, a, b)
            return (fit(j, at) if op == "<<" else j), at
        if op == "++":
            a, at = self.lower(e.left)
            b, bt = self.lower(e.right)
            sa, sb = scalar_type(at), scalar_type(bt)
            if not isinstance(sa, Bits) or not isinstance(sb, Bits):
                raise fail(e, "'++' needs bit<> or int<> operands of known width")
            left = expr("<<", fit(a, Bits(sa.width)), hexstr(sb.width))
            return expr("|", left, fit(b, Bits(sb.width))), Bits(sa.width + sb.width, sa.signed)
        if op in ("==", "!=") and isinstance(e.left, _PLACE_SHAPES) and isinstance(e.right, _PLACE_SHAPES):
            left, right = self.value_of(e.left), self.value_of(e.right)
            if isinstance(left, (HeaderValue, StructValue, StackValue)):
                same = self._equal_values(left, right, e)
                return (same if op == "==" else expr("not", None, same)), Bool()
        a, at, b, bt = self._operands(e, expected)
        if isinstance(at, InfInt) and isinstance(bt, InfInt) and a.get("type") == "hexstr" and b.get("type") == "hexstr":
            value = self.scope.const_eval(e, self._const_lookup)
            return self.const_json(value, Bool() if isinstance(value, bool) else InfInt(), expected, e)
        if op in COMPARISONS:
            if isinstance(at, Bool) or isinstance(bt, Bool):
                a, b = to_data(a, at), to_data(b, bt)
            return expr(op, a, b), Bool()
        t = at if not isinstance(at, InfInt) else bt
        if op in ("|+|", "|-|"):
            st = scalar_type(t)
            if not isinstance(st, Bits):
                raise fail(e, "saturating arithmetic needs bit<> or int<> operands")
            return expr("sat_cast" if st.signed else "usat_cast", expr(op[1], a, b), hexstr(st.width)), t
        if op not in ("+", "-", "*", "/", "%", "&", "|", "^"):
            raise fail(e, f"unknown operator '{op}'")
        j = expr(op, a, b)
        if op in ("+", "-", "*"):
            j = fit(j, t)
        return j, t

    def _equal_values(self, a: Value, b: Value, node: Any) -> dict:
        """``a == b`` for headers (both invalid, or both valid with equal fields), header
        stacks (element by element) and structs (member by member)."""
        if isinstance(a, StackValue) and isinstance(b, StackValue) \
                and len(a.elements) == len(b.elements):
            out = None
            for x, y in zip(a.elements, b.elements):
                eq = self._equal_values(HeaderValue(x, a.type.element), HeaderValue(y, b.type.element), node)
                out = eq if out is None else expr("and", out, eq)
            return out if out is not None else {"type": "bool", "value": True}
        if isinstance(a, HeaderValue) and isinstance(b, HeaderValue):
            fields = None
            for name, _ in a.type.fields:
                (x, xt), (y, yt) = self.rvalue(a.field(name), node), self.rvalue(b.field(name), node)
                eq = expr("==", to_data(x, xt), to_data(y, yt))
                fields = eq if fields is None else expr("and", fields, eq)
            fields = fields if fields is not None else {"type": "bool", "value": True}
            if a.metadata or b.metadata:
                return fields
            va = expr("d2b", None, {"type": "field", "value": [a.name, "$valid$"]})
            vb = expr("d2b", None, {"type": "field", "value": [b.name, "$valid$"]})
            same_validity = expr("==", expr("b2d", None, va), expr("b2d", None, vb))
            return expr("and", same_validity, expr("or", expr("not", None, va), fields))
        if isinstance(a, StructValue) and isinstance(b, StructValue) and a.members.keys() == b.members.keys():
            out = None
            for name, m in a.members.items():
                other = b.members[name]
                if isinstance(m, (HeaderValue, StructValue, StackValue)):
                    eq = self._equal_values(m, other, node)
                else:
                    (x, xt), (y, yt) = self.rvalue(m, node), self.rvalue(other, node)
                    eq = expr("==", to_data(x, xt), to_data(y, yt))
                out = eq if out is None else expr("and", out, eq)
            return out if out is not None else {"type": "bool", "value": True}
        raise fail(node, "'==' needs two values of the same header, stack or struct type")

    def _cast(self, e: ast.CastExpression) -> tuple[dict, P4Type]:
        target = self.scope.resolve(e.type)
        j, t = self.lower(e.expr, target)
        st, tt = scalar_type(t), scalar_type(target)
        if isinstance(tt, Bool):
            if isinstance(t, Bool):
                return j, target
            if j.get("type") == "hexstr":
                return {"type": "bool", "value": int(j["value"], 16) != 0}, Bool()
            return expr("d2b", None, j), Bool()
        if isinstance(tt, Bits):
            if isinstance(t, Bool):
                return expr("b2d", None, j), target
            if isinstance(st, InfInt) and j.get("type") == "hexstr":
                return self.const_json(int(j["value"], 16), target, None, e)
            if isinstance(st, Bits):
                if st.width <= tt.width and st.signed == tt.signed:
                    return j, target
                if not st.signed and not tt.signed and j.get("type") == "hexstr":
                    return self.const_json(int(j["value"], 16), target, None, e)
                return fit(j, tt), target
            if isinstance(st, (EnumT, ErrorT)):
                return fit(j, tt), target
        if isinstance(target, EnumT):
            return j, target
        raise fail(e, f"cannot cast {t} to {target}")

    def _call(self, e: ast.MethodCallExpression, expected: P4Type | None) -> tuple[dict, P4Type]:
        m = e.method
        if isinstance(m, ast.MemberExpression) and m.member == "isValid" and not e.args:
            base = self.value_of(m.expr)
            if isinstance(base, HeaderValue):
                return expr("d2b", None, {"type": "field", "value": [base.name, "$valid$"]}), Bool()
            if isinstance(base, UnionValue):
                return expr("valid_union", None, {"type": "header_union", "value": base.name}), Bool()
            if isinstance(base, DynamicStackElement):
                self._check_next(base)
                valid = [{"type": "field", "value": [h, "$valid$"]} for h in base.stack.elements]
                return expr("d2b", None, by_index(base.index_json, valid, hexstr(0))), Bool()
            raise fail(e, "isValid() needs a header or header union")
        if isinstance(m, ast.MemberExpression) and m.member == "lookahead":
            if not e.type_args:
                raise fail(e, "lookahead needs a type argument")
            t = self.scope.resolve(e.type_args[0])
            if not isinstance(t, (Bits, Bool)):
                raise UnsupportedError.at(e.loc, "lookahead of a non-bit<> type in an expression")
            return {"type": "lookahead", "value": [0, bit_width(t)]}, t
        raise UnsupportedError.at(e.loc, "method call inside an expression",
                                  "assign its result in a statement instead")

    def _lookahead_field(self, e: ast.MemberExpression) -> tuple[dict, P4Type]:
        """``pkt.lookahead<H>().f``: the bits of field f of the header H ahead."""
        call = e.expr
        assert isinstance(call, ast.MethodCallExpression)
        if not call.type_args:
            raise fail(call, "lookahead needs a type argument")
        t = self.scope.resolve(call.type_args[0])
        if not isinstance(t, (HeaderT, StructT)) or not all(ft.is_scalar() for _, ft in t.fields):
            raise fail(e, f"lookahead<{t}>() has no fields")
        offset = 0
        for fname, ft in t.fields:
            if fname == e.member:
                return {"type": "lookahead", "value": [offset, bit_width(ft)]}, ft
            offset += bit_width(ft)
        raise fail(e, f"'{t.name}' has no field '{e.member}'")

    # ------------------------------------------------------------------ targets
    def lvalue(self, e: ast.Expression) -> Value:
        """The storage an assignment or ``out`` argument writes."""
        if isinstance(e, ast.SliceExpression):
            return self.value_of(e)  # handled by the assignment lowering
        v = self.value_of(e)
        if isinstance(v, (FieldValue, HeaderValue, StructValue, StackValue, UnionValue)):
            return v
        if isinstance(v, ExprValue) and v.json.get("type") == "expression" and \
                v.json["value"].get("op") == "access_field":
            return v
        raise fail(e, "expression cannot be assigned to")


def by_index(index: dict, choices: list[dict], otherwise: dict) -> dict:
    """``choices[index]`` as a chain of ``?:`` (``otherwise`` past the end)."""
    out = otherwise
    for k in reversed(range(len(choices))):
        out = expr("?", choices[k], out, cond=expr("==", index, hexstr(k)))
    return out


def struct_like(t: P4Type) -> bool:
    return isinstance(t, StructLike)


def stack_of(t: P4Type) -> bool:
    return isinstance(t, StackT)


def is_union(t: P4Type) -> bool:
    return isinstance(t, UnionT)


def _is_lookahead(e: ast.Expression) -> bool:
    return isinstance(e, ast.MethodCallExpression) and isinstance(e.method, ast.MemberExpression) \
        and e.method.member == "lookahead"
