"""Calls inside expressions, run in P4's evaluation order.

BMv2 expressions cannot call anything, so an expression that holds a call (a P4 function, or
``t.apply().hit/miss``) is taken apart first: each call becomes steps that run before the
statement and leave its result in a temporary, which the rewritten expression reads. P4
evaluates left to right, so a value read before a call is saved before the call runs; ``&&``,
``||`` and ``?:`` evaluate only the operand they need, so calls in those operands run under
an ``if``. Assignment targets are evaluated before the value (their stack indices are saved).
"""
from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from p4target.compiler import ast
from p4target.compiler.ir import HitItem, IfItem, Item, Prims, assign
from p4target.compiler.semantics import fail
from p4target.compiler.types import Bool, InfInt, P4Type, VoidT
from p4target.compiler.values import ActionSymbol, ConstValue, HeaderValue, StructValue
from p4target.errors import CompileError

if TYPE_CHECKING:  # annotations only: statements imports this module
    from p4target.compiler.statements import StatementLowering

_LVALUE_SHAPES = (ast.PathExpression, ast.MemberExpression, ast.IndexExpression, ast.SliceExpression)


def is_table_result(node: Any) -> bool:
    """``t.apply().hit`` or ``t.apply().miss``."""
    return isinstance(node, ast.MemberExpression) and node.member in ("hit", "miss") and \
        isinstance(node.expr, ast.MethodCallExpression) and \
        isinstance(node.expr.method, ast.MemberExpression) and node.expr.method.member == "apply"


class CallHoister:
    """Collects the steps that run the calls of one statement's expressions, in order."""

    def __init__(self, lowering: "StatementLowering") -> None:
        self.lowering = lowering
        self.items: list[Item] = []

    # ------------------------------------------------------------------ queries
    def has_call(self, e: Any) -> bool:
        return any(is_table_result(n) or self.lowering.function_of(n) is not None for n in ast.walk(e))

    def _sub(self) -> "CallHoister":
        return CallHoister(self.lowering)

    # ------------------------------------------------------------------ temporaries
    def _temp(self, t: P4Type, node: Any, hint: str) -> ast.PathExpression:
        lw = self.lowering
        name = lw.ctx.fresh(f"__{hint}")
        lw.env.define(name, lw.ctx.storage.variable(hint, t, node))
        return ast.PathExpression(loc=node.loc, name=name)

    def _assign(self, target: ast.PathExpression, value: ast.Expression) -> None:
        lw = self.lowering
        self.items.append(Prims(lw.assign_value(lw.env.lookup(target.name), value, value)))

    def save(self, e: ast.Expression) -> ast.Expression:
        """``e``'s current value in a temporary, when a later call could change it."""
        if isinstance(e, (ast.IntLiteral, ast.BoolLiteral, ast.StringLiteral)):
            return e
        lw = self.lowering
        if isinstance(e, ast.PathExpression) and isinstance(lw.env.lookup(e.name), ConstValue):
            return e
        try:
            _, t = lw.ex.lower(e)
        except CompileError:  # not a scalar (header, struct...): read where it is
            return e
        if isinstance(t, InfInt):
            return e
        tmp = self._temp(t, e, "tmp")
        self._assign(tmp, e)
        return tmp

    # ------------------------------------------------------------------ expressions
    def value(self, e: ast.Expression) -> ast.Expression:
        """``e`` with its calls run first; the result reads their temporaries."""
        if not self.has_call(e):
            return e
        if is_table_result(e):
            return self._table_result(e)
        if isinstance(e, ast.MethodCallExpression) and self.lowering.function_of(e) is not None:
            return self.call(e, want_result=True)
        if isinstance(e, ast.BinaryExpression) and e.op in ("&&", "||"):
            return self._short_circuit(e)
        if isinstance(e, ast.TernaryExpression):
            return self._mux(e)
        if isinstance(e, ast.MethodCallExpression):  # a method: only its arguments' calls move
            return self.call(e, want_result=False)
        return self._in_order(e)

    def _in_order(self, e: ast.Node) -> ast.Node:
        """Operands left to right; those read before a call are saved first."""
        slots: list[tuple[str, int | None]] = []
        for f in dataclasses.fields(e):
            v = getattr(e, f.name)
            if f.name != "loc" and isinstance(v, (ast.Expression, ast.NamedExpression)):
                slots.append((f.name, None))
            elif isinstance(v, tuple):
                slots += [(f.name, i) for i, x in enumerate(v)
                          if isinstance(x, (ast.Expression, ast.NamedExpression))]
        values = {f.name: list(getattr(e, f.name)) if isinstance(getattr(e, f.name), tuple)
                  else getattr(e, f.name) for f in dataclasses.fields(e) if f.name != "loc"}

        def get(slot: tuple[str, int | None]) -> Any:
            return values[slot[0]] if slot[1] is None else values[slot[0]][slot[1]]

        def put(slot: tuple[str, int | None], v: Any) -> None:
            if slot[1] is None:
                values[slot[0]] = v
            else:
                values[slot[0]][slot[1]] = v

        for n, slot in enumerate(slots):
            child = get(slot)
            inner = child.value if isinstance(child, ast.NamedExpression) else child
            if not self.has_call(inner):
                continue
            for earlier in slots[:n]:
                prev = get(earlier)
                if isinstance(prev, ast.NamedExpression):
                    put(earlier, dataclasses.replace(prev, value=self.save(prev.value)))
                else:
                    put(earlier, self.save(prev))
            new = self.value(inner)
            put(slot, dataclasses.replace(child, value=new) if isinstance(child, ast.NamedExpression) else new)
        return dataclasses.replace(e, **{k: tuple(v) if isinstance(v, list) else v for k, v in values.items()})

    def _short_circuit(self, e: ast.BinaryExpression) -> ast.Expression:
        left = self.value(e.left)
        if not self.has_call(e.right):
            return dataclasses.replace(e, left=left)
        result = self._temp(Bool(), e, "tmp")
        self._assign(result, left)
        sub = self._sub()
        right = sub.value(e.right)
        sub._assign(result, right)
        need_right = result if e.op == "&&" else ast.UnaryExpression(loc=e.loc, op="!", operand=result)
        self._if(need_right, sub.items, [])
        return result

    def _mux(self, e: ast.TernaryExpression) -> ast.Expression:
        cond = self.value(e.condition)
        if not self.has_call(e.then) and not self.has_call(e.otherwise):
            return dataclasses.replace(e, condition=cond)
        cond = self.save(cond)
        then, other = self._sub(), self._sub()
        a, b = then.value(e.then), other.value(e.otherwise)
        t = self._type_of(a, b)
        result = self._temp(t, e, "tmp")
        then._assign(result, a)
        other._assign(result, b)
        self._if(cond, then.items, other.items)
        return result

    def _type_of(self, a: ast.Expression, b: ast.Expression) -> P4Type:
        ex = self.lowering.ex
        if isinstance(a, ast.PathExpression):
            v = ex.value_of(a)
            if isinstance(v, (HeaderValue, StructValue)):  # a header or struct result
                return v.type
        _, at = ex.lower(a)
        if not isinstance(at, InfInt):
            return at
        _, bt = ex.lower(b)
        if isinstance(bt, InfInt):
            raise fail(a, "cannot infer the width of this conditional expression")
        return bt

    def _if(self, cond: ast.Expression, then: list[Item], otherwise: list[Item]) -> None:
        self.items.append(IfItem(self.lowering.ex.lower_bool(cond), then, otherwise))

    def _table_result(self, e: ast.MemberExpression) -> ast.Expression:
        lw = self.lowering
        table = lw._table_of(e.expr)
        flag = self._temp(Bool(), e, f"{table.decl.name}_{e.member}")
        json = lw.env.lookup(flag.name).json()
        one = [Prims([assign(json, {"type": "hexstr", "value": "0x1"})])]
        zero = [Prims([assign(json, {"type": "hexstr", "value": "0x0"})])]
        hit = e.member == "hit"
        self.items.append(HitItem(table, e.expr, one if hit else zero, zero if hit else one))
        return flag

    # ------------------------------------------------------------------ calls and targets
    def call(self, c: ast.MethodCallExpression, want_result: bool) -> ast.Expression | None:
        """Arguments' calls first (left to right), then ``c``; for a P4 function called for its
        value, the temporary holding the result."""
        c = dataclasses.replace(c, args=self.arguments(c))
        if not want_result:
            return c
        lw = self.lowering
        decl = lw.function_of(c)
        assert decl is not None
        t = lw.ctx.scope.resolve(decl.prototype.return_type) \
            if decl.prototype.return_type is not None else None
        if t is None or isinstance(t, VoidT):
            raise fail(c, f"function '{decl.name}' returns no value")
        result = self._temp(t, c, f"{decl.name}_result")
        self.items.append(lw.inline_function(c, lw.env.lookup(result.name)))
        return result

    def arguments(self, c: ast.MethodCallExpression) -> tuple:
        """The arguments with their calls hoisted; arguments read earlier are saved first."""
        directions = self._directions(c)
        args = list(c.args)
        for i, a in enumerate(args):
            value = a.value if isinstance(a, ast.NamedArgument) else a
            if not self.has_call(value):
                continue
            for j in range(i):
                if directions.get(j, "in") in ("in", "") and not isinstance(args[j], ast.NamedArgument):
                    args[j] = self.save(args[j])
            if directions.get(i, "in") in ("out", "inout") or isinstance(value, _LVALUE_SHAPES):
                value = self.target(value, save_indices=False)
            else:
                value = self.value(value)
            args[i] = dataclasses.replace(a, value=value) if isinstance(a, ast.NamedArgument) else value
        return tuple(args)

    def _directions(self, c: ast.MethodCallExpression) -> dict[int, str]:
        lw = self.lowering
        params: tuple = ()
        decl = lw.function_of(c)
        if decl is not None:
            params = decl.prototype.params
        elif isinstance(c.method, ast.PathExpression):
            sym = lw.env.lookup(c.method.name)
            if isinstance(sym, ActionSymbol):
                params = sym.decl.params
        return {i: (p.direction or "") for i, p in enumerate(params)}

    def target(self, e: ast.Expression, save_indices: bool) -> ast.Expression:
        """An assignment target or ``out`` argument, its stack indices evaluated now."""
        if isinstance(e, ast.IndexExpression):
            base = self.target(e.expr, save_indices)
            index = self.value(e.index)
            if save_indices:
                index = self.save(index)
            return dataclasses.replace(e, expr=base, index=index)
        if isinstance(e, (ast.MemberExpression, ast.SliceExpression)):
            return dataclasses.replace(e, expr=self.target(e.expr, save_indices))
        return self.value(e)
