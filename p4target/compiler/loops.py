"""Lowering of ``for`` loops (P4_16 1.2.4): C-style ``for (init; cond; update)`` and
``for (T x in collection)`` over a range ``lo .. hi``, a list expression or a header stack.

BMv2's pipelines and parsers are acyclic, so a loop there is unrolled at compile time, as p4c's
UnrollLoops pass does: a C-style loop whose condition compares its loop variable with a
constant, whose init sets that variable to a constant and whose update is the only other write
to it; a ``for ... in`` over a constant range, a list or a stack; not a loop marked
``@nounroll``. The body then sees the loop
variable as a constant; ``break`` / ``continue`` become flags guarding the statements after them
(and the later iterations). Inside an action a loop that cannot be unrolled runs with BMv2's
jump primitives instead (`LoopItem`); anywhere else it is reported as unsupported.
"""
from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Callable

from p4target.compiler import ast
from p4target.compiler.bmv2_json import expr, hexstr
from p4target.compiler.ir import (BreakItem, ContinueItem, HitItem, IfItem, Item, LoopItem, Prims, SubBlock,
                                  SwitchItem, merge)
from p4target.compiler.semantics import fail
from p4target.compiler.types import Bits, Bool, P4Type
from p4target.compiler.values import ConstValue, FieldValue, StackValue, Value
from p4target.errors import CompileError, UnsupportedError

if TYPE_CHECKING:  # annotations only: statements imports this module
    from p4target.compiler.statements import StatementLowering

MAX_ITERATIONS = 1000
_RELATIONS = ("<", "<=", ">", ">=", "==", "!=")


class _NotUnrollable(Exception):
    """The loop's iterations are not known at compile time; ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def lower_for(sl: "StatementLowering", s: ast.ForStatement) -> list[Item]:
    """A C-style ``for`` loop: unrolled, or jumps inside an action."""
    loop = sl.with_env(sl.env.child())
    init = loop.block(s.init)
    try:
        _check_unroll_allowed(s)
        name, t, values = _c_style_iterations(loop, s)
    except _NotUnrollable as e:
        if not _can_jump(sl):
            raise UnsupportedError.at(s.loc, f"'for' loop in a {sl.block_kind} whose iterations are "
                                             "not known at compile time",
                                      f"{e.reason}; BMv2 loops only inside an action") from None
        cond = loop.ex.lower_bool(s.condition) if s.condition is not None else None
        body = _body_lowering(loop, {}).statement(s.body)
        return [LoopItem(init, cond, body, loop.block(s.update))]
    iterations = [({name: ConstValue(v, t)}, []) for v in values]
    return init + _unroll(loop, s.body, iterations, lambda: loop.block(s.update))


def lower_for_in(sl: "StatementLowering", s: ast.ForInStatement) -> list[Item]:
    """``for (T x in collection)``: unrolled, or (a run-time range in an action) jumps."""
    loop = sl.with_env(sl.env.child())
    if s.type is not None:
        t = sl.ctx.scope.resolve(s.type)
        prefix = sl.control.prefix if sl.control else ""
        var = sl.ctx.storage.variable(f"{prefix}.{s.name}" if prefix else s.name, t, s)
        loop.env.define(s.name, var)
    else:
        var = loop.ex.lvalue(ast.PathExpression(loc=s.loc, name=s.name))
        t = getattr(var, "type", None)
    writes = _writes(s.body, s.name) or s.type is None  # an outer variable keeps its last value
    coll = s.collection
    if isinstance(coll, ast.RangeExpression):
        try:
            _check_unroll_allowed(s)
            lo = loop.ctx.scope.const_eval(coll.low, loop.ex._const_lookup, t)
            hi = loop.ctx.scope.const_eval(coll.high, loop.ex._const_lookup, t)
        except (CompileError, _NotUnrollable) as e:
            if not _can_jump(sl):
                reason = e.reason if isinstance(e, _NotUnrollable) else \
                    "its range bounds are not compile-time constants"
                raise UnsupportedError.at(s.loc, f"'for ... in' loop in a {sl.block_kind} whose "
                                                 "iterations are not known at compile time",
                                          f"{reason}; BMv2 loops only inside an action") from None
            return [_range_jumps(loop, s, coll)]
        if hi - lo + 1 > MAX_ITERATIONS:
            raise UnsupportedError.at(s.loc, f"'for ... in' loop of more than {MAX_ITERATIONS} iterations")
        elements: list[ast.Expression] = [ast.IntLiteral(loc=coll.loc, value=v) for v in range(lo, hi + 1)]
    elif any(a.name == "nounroll" for a in s.annotations):
        raise UnsupportedError.at(s.loc, "'for ... in' loop over a list or a header stack marked "
                                         "@nounroll", "BMv2 loops only over a range inside an action")
    elif isinstance(coll, ast.ListExpression):
        elements = list(coll.elements)
    else:
        stack = loop.ex.value_of(coll)
        if not isinstance(stack, StackValue):
            raise fail(coll, "'for ... in' needs a range 'lo .. hi', a list or a header stack")
        elements = [ast.IndexExpression(loc=coll.loc, expr=coll, index=ast.IntLiteral(loc=coll.loc, value=k))
                    for k in range(len(stack.elements))]
    iterations: list[tuple[dict[str, Value], list[Item]]] = []
    for e in elements:
        value = None if writes else _constant(loop, e, t)
        if value is not None:
            iterations.append(({s.name: ConstValue(value, t)}, []))
        else:
            iterations.append(({}, [Prims(loop.assign_value(var, e, s))]))
    return _unroll(loop, s.body, iterations, lambda: [])


# --------------------------------------------------------------------------- bounds
def _c_style_iterations(loop: "StatementLowering", s: ast.ForStatement) -> tuple[str, P4Type, list[int]]:
    """(loop variable, its type, its value in each iteration), as p4c's UnrollLoops finds them."""
    cond = s.condition
    if not (isinstance(cond, ast.BinaryExpression) and cond.op in _RELATIONS):
        raise _NotUnrollable("its condition does not compare the loop variable with a constant")
    name = None
    for var_side, other in ((cond.left, cond.right), (cond.right, cond.left)):
        if isinstance(var_side, ast.PathExpression) and _constant(loop, other, None) is not None:
            name = var_side.name
            break
    if name is None:
        raise _NotUnrollable("its condition does not compare the loop variable with a constant")
    var = loop.env.lookup(name)
    if not (isinstance(var, FieldValue) and isinstance(var.type, Bits)):
        raise _NotUnrollable(f"'{name}' is not a bit<> or int<> variable")
    t = var.type
    starts = [st for st in s.init if _defines(st, name)]
    if len(starts) != 1:
        raise _NotUnrollable(f"its init does not set '{name}' exactly once")
    start = starts[0]
    first = _constant(loop, start.initializer if isinstance(start, ast.VariableDecl) else start.value, t)
    if first is None:
        raise _NotUnrollable(f"'{name}' does not start at a constant")
    steps = [st for st in s.update if _writes(st, name)]
    if len(steps) != 1 or not isinstance(steps[0], ast.AssignmentStatement) or \
            not isinstance(steps[0].target, ast.PathExpression):
        raise _NotUnrollable(f"its update does not assign '{name}' exactly once")
    if _writes(s.body, name):
        raise _NotUnrollable(f"its body assigns '{name}'")
    step = steps[0].value
    values: list[int] = []
    value = first
    while True:
        def lookup(n: str, current: int = value) -> Any:
            return current if n == name else loop.ex._const_lookup(n)
        try:
            go = loop.ctx.scope.const_eval(cond, lookup)
            if not go:
                return name, t, values
            values.append(value)
            value = loop.ctx.scope.const_eval(step, lookup, t)
        except CompileError:
            raise _NotUnrollable(f"its update of '{name}' is not a constant step") from None
        if len(values) > MAX_ITERATIONS:
            raise _NotUnrollable(f"it does not end within {MAX_ITERATIONS} iterations")


def _check_unroll_allowed(s: ast.Statement) -> None:
    if any(a.name == "nounroll" for a in getattr(s, "annotations", ())):
        raise _NotUnrollable("it is marked @nounroll")


def _constant(loop: "StatementLowering", e: ast.Expression | None, t: P4Type | None) -> Any | None:
    if e is None:
        return None
    try:
        v = loop.ctx.scope.const_eval(e, loop.ex._const_lookup, t)
    except CompileError:
        return None
    return v if isinstance(v, int) else None


def _defines(st: ast.Statement, name: str) -> bool:
    if isinstance(st, ast.VariableDecl):
        return st.name == name and st.initializer is not None
    return isinstance(st, ast.AssignmentStatement) and isinstance(st.target, ast.PathExpression) \
        and st.target.name == name


def _root(e: ast.Expression) -> str | None:
    while isinstance(e, (ast.MemberExpression, ast.IndexExpression, ast.SliceExpression)):
        e = e.expr
    return e.name if isinstance(e, ast.PathExpression) else None


def _writes(st: ast.Statement | None, name: str) -> bool:
    """Whether ``st`` assigns ``name`` (or part of it) before a declaration shadows it."""
    if st is None:
        return False
    if isinstance(st, ast.AssignmentStatement):
        return _root(st.target) == name
    if isinstance(st, ast.BlockStatement):
        for inner in st.statements:
            if isinstance(inner, ast.VariableDecl) and inner.name == name:
                return False
            if _writes(inner, name):
                return True
        return False
    if isinstance(st, ast.IfStatement):
        return _writes(st.then, name) or _writes(st.otherwise, name)
    if isinstance(st, ast.SwitchStatement):
        return any(_writes(c.body, name) for c in st.cases)
    if isinstance(st, ast.ForStatement):
        return any(_writes(x, name) for x in (*st.init, *st.update, st.body))
    if isinstance(st, ast.ForInStatement):
        return st.name == name and st.type is None or _writes(st.body, name)
    return False


def _can_jump(sl: "StatementLowering") -> bool:
    return sl.block_kind == "action" and not sl.in_parser


def _body_lowering(loop: "StatementLowering", names: dict[str, Value]) -> "StatementLowering":
    inner = loop.with_env(loop.env.child(names))
    inner.in_loop = True
    return inner


def _range_jumps(loop: "StatementLowering", s: ast.ForInStatement, coll: ast.RangeExpression) -> Item:
    """``for (x in lo .. hi)`` with run-time bounds inside an action, as a jump loop that tests
    ``x != hi`` before stepping (so ``hi`` may be the type's largest value)."""
    t = getattr(loop.env.lookup(s.name), "type", None)
    loop.env.define("$for_high", loop.ctx.storage.variable("for_high", t, s))
    loop.env.define("$for_more", loop.ctx.storage.variable("for_more", Bool(), s))

    def path(n: str) -> ast.PathExpression:
        return ast.PathExpression(loc=s.loc, name=n)

    def set_(n: str, value: ast.Expression) -> ast.AssignmentStatement:
        return ast.AssignmentStatement(loc=s.loc, target=path(n), value=value)

    x, high, more = path(s.name), path("$for_high"), path("$for_more")
    init = loop.block((set_(s.name, coll.low), set_("$for_high", coll.high),
                       set_("$for_more", ast.BinaryExpression(loc=s.loc, op="<=", left=x, right=high))))
    update = loop.block((set_("$for_more", ast.BinaryExpression(loc=s.loc, op="!=", left=x, right=high)),
                         set_(s.name, ast.BinaryExpression(loc=s.loc, op="+", left=x,
                                                           right=ast.IntLiteral(loc=s.loc, value=1)))))
    body = _body_lowering(loop, {}).statement(s.body)
    return LoopItem(init, loop.ex.lower_bool(more), body, update)


# --------------------------------------------------------------------------- unrolling
class _Flags:
    """The ``break`` / ``continue`` flags of one unrolled loop (created on first use)."""

    def __init__(self, loop: "StatementLowering") -> None:
        self.loop = loop
        self.brk: dict | None = None
        self.cont: dict | None = None

    def _new(self, base: str) -> dict:
        return {"type": "field", "value": ["scalars", self.loop.ctx.out.add_scalar(base, Bool())]}

    @staticmethod
    def set(flag: dict, on: bool) -> dict:
        return {"op": "assign", "parameters": [flag, hexstr(1 if on else 0)]}

    def live(self, with_continue: bool = True) -> dict:
        flags = [f for f in (self.brk, self.cont if with_continue else None) if f is not None]
        conds = [expr("not", None, expr("d2b", None, f)) for f in flags]
        return conds[0] if len(conds) == 1 else expr("and", conds[0], conds[1])

    def remove_jumps(self, items: list[Item]) -> list[Item]:
        """``items`` with break/continue turned into flag assignments; whatever follows one
        runs only while no flag is set."""
        out: list[Item] = []
        for k, it in enumerate(items):
            new, jumps = self._rewrite(it)
            out.append(new)
            if jumps:
                rest = self.remove_jumps(items[k + 1:])
                if rest:
                    out.append(IfItem(self.live(), rest, []))
                break
        return out

    def _rewrite(self, it: Item) -> tuple[Item, bool]:
        if isinstance(it, BreakItem):
            self.brk = self.brk or self._new("breakFlag")
            return Prims([self.set(self.brk, True)]), True
        if isinstance(it, ContinueItem):
            self.cont = self.cont or self._new("continueFlag")
            return Prims([self.set(self.cont, True)]), True
        if isinstance(it, (IfItem, HitItem)):
            then, otherwise = self._branch(it.then), self._branch(it.otherwise)
            return dataclasses.replace(it, then=then[0], otherwise=otherwise[0]), then[1] or otherwise[1]
        if isinstance(it, SwitchItem):
            cases = [(labels, self._branch(body)) for labels, body in it.cases]
            default = None if it.default is None else self._branch(it.default)
            jumps = any(b[1] for _, b in cases) or bool(default and default[1])
            return dataclasses.replace(it, cases=[(labels, b[0]) for labels, b in cases],
                                       default=None if default is None else default[0]), jumps
        if isinstance(it, SubBlock):
            items, jumps = self._branch(it.items)
            return SubBlock(items), jumps
        return it, False  # a LoopItem's own break/continue stay its jumps

    def _branch(self, items: list[Item]) -> tuple[list[Item], bool]:
        return self.remove_jumps(items), _mentions_jump(items)


def _mentions_jump(items: list[Item]) -> bool:
    for it in items:
        if isinstance(it, (BreakItem, ContinueItem)):
            return True
        if isinstance(it, (IfItem, HitItem)) and (_mentions_jump(it.then) or _mentions_jump(it.otherwise)):
            return True
        if isinstance(it, SwitchItem) and (any(_mentions_jump(b) for _, b in it.cases) or
                                           (it.default is not None and _mentions_jump(it.default))):
            return True
        if isinstance(it, SubBlock) and _mentions_jump(it.items):
            return True
    return False


def _unroll(loop: "StatementLowering", body: ast.Statement,
            iterations: list[tuple[dict[str, Value], list[Item]]],
            update: Callable[[], list[Item]]) -> list[Item]:
    """The body once per iteration (``names`` bound in its scope, ``start`` items first), each
    followed by the update; after a ``break`` the rest of the loop is skipped."""
    flags = _Flags(loop)
    out: list[Item] = []
    tail = out
    blocks = [out]
    for names, start in iterations:
        items = flags.remove_jumps(_body_lowering(loop, names).statement(body))
        if flags.cont is not None:
            tail.append(Prims([flags.set(flags.cont, False)]))
        tail.extend(start + items)
        if flags.brk is not None:
            nested: list[Item] = []
            tail.append(IfItem(flags.live(with_continue=False), nested, []))
            tail = nested
            blocks.append(nested)
        tail.extend(update())
    if flags.brk is not None:
        out.insert(0, Prims([flags.set(flags.brk, False)]))
    for block in blocks:
        block[:] = merge(block)
    return out
