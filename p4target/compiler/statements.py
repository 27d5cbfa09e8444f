"""Lowering of P4 statements to a small control-flow form (`Item`s).

Straight-line code becomes BMv2 primitives (`Prims`); table applications, `if`, `switch`,
`exit` and `return` stay structured so that controls can turn them into a BMv2 pipeline graph
and actions can turn them into predicated primitives.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Optional

from p4target.compiler import ast
from p4target.compiler.bmv2_json import expr
from p4target.compiler.call_order import CallHoister
from p4target.compiler.context import Context
from p4target.compiler.expressions import Env, ExpressionLowering, to_data
from p4target.compiler.loops import lower_for, lower_for_in
from p4target.compiler.semantics import fail
from p4target.compiler.types import Bits, Bool, VarbitT, VoidT, bit_width, new_type_name
from p4target.compiler.values import (ActionSymbol, BlockInstance, ConstValue, ControlContext,
                                      DynamicStackElement, DynamicStackField, ExprValue, ExternInstance, FieldValue, HeaderValue,
                                      PacketValue, StackValue, StructValue,
                                      TableSymbol, TypeValue, UnionValue, Value)
from p4target.errors import CompileError, UnsupportedError


# --------------------------------------------------------------------------- items
class Item:
    """One step of lowered control flow."""


@dataclass
class Prims(Item):
    primitives: list[dict]


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
    default: Optional[list[Item]] = None


@dataclass
class ExitItem(Item):
    pass


@dataclass
class ReturnItem(Item):
    pass


@dataclass
class LoopItem(Item):
    """A ``for`` loop inside an action that is not unrolled (BMv2 runs it with `_jump_if_zero` /
    `_jump`; see `loops`)."""
    init: list[Item]
    cond: Optional[dict]
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


# --------------------------------------------------------------------------- lowering
class StatementLowering:
    """Lowers statements of one block (control apply, action body, parser state)."""

    def __init__(self, ctx: Context, env: Env, control: Optional[ControlContext],
                 in_parser: bool = False, block_kind: str = "control",
                 return_target: Optional[Value] = None) -> None:
        self.ctx = ctx
        self.return_target = return_target
        self.env = env
        self.control = control
        self.in_parser = in_parser
        self.block_kind = block_kind
        self.ex = ExpressionLowering(ctx.scope, env, in_parser)
        self.in_loop = False  # inside a for loop's body: break / continue allowed

    def with_env(self, env: Env) -> "StatementLowering":
        sl = StatementLowering(self.ctx, env, self.control, self.in_parser, self.block_kind,
                               self.return_target)
        sl.in_loop = self.in_loop
        return sl

    # ------------------------------------------------------------------ blocks
    def block(self, statements: tuple) -> list[Item]:
        items: list[Item] = []
        for s in statements:
            items.extend(self.statement(s))
        return _merge(items)

    def statement(self, s: ast.Statement) -> list[Item]:
        items = self._statement(s)
        checks = self.ex.take_bounds_checks()
        return [Prims(checks)] + items if checks else items

    def _statement(self, s: ast.Statement) -> list[Item]:
        if isinstance(s, ast.BlockStatement):
            return self.with_env(self.env.child()).block(s.statements)
        if isinstance(s, ast.EmptyStatement):
            return []
        hoisted = self._hoist_calls(s)
        if hoisted is not None:
            return hoisted
        if isinstance(s, ast.AssignmentStatement):
            if isinstance(s.target, ast.IndexExpression):
                place = self.ex.value_of(s.target)
                if isinstance(place, DynamicStackElement):
                    return [self.for_element(place, s, lambda h: self.assign_value(h, s.value, s))]
            if isinstance(s.value, ast.TernaryExpression) and \
                    isinstance(self.ex.lvalue(s.target), (HeaderValue, StructValue, UnionValue, StackValue)):
                # a header or struct `?:`: BMv2 expressions are scalar, so choose with an `if`
                v = s.value
                return self.statement(ast.IfStatement(
                    loc=s.loc, condition=v.condition,
                    then=dataclasses.replace(s, value=v.then),
                    otherwise=dataclasses.replace(s, value=v.otherwise)))
            if isinstance(s.value, ast.IndexExpression):
                source = self.ex.value_of(s.value)
                if isinstance(source, DynamicStackElement):
                    dst = self.ex.lvalue(s.target)
                    return [self.for_element(source, s, lambda h: self.copy(dst, h, s))]
            return [Prims(self.assignment(s.target, s.value))]
        if isinstance(s, ast.MethodCallStatement):
            return self.call(s.call)
        if isinstance(s, ast.VariableDecl):
            t = self.ctx.scope.resolve(s.type)
            base = f"{self.control.prefix}.{s.name}" if self.control and self.control.prefix else s.name
            v = self.ctx.storage.variable(base, t, s)
            self.env.define(s.name, v)
            if s.initializer is None:
                return []
            if isinstance(s.initializer, ast.IndexExpression):
                source = self.ex.value_of(s.initializer)
                if isinstance(source, DynamicStackElement):
                    return [self.for_element(source, s, lambda h: self.copy(v, h, s))]
            return [Prims(self.assign_value(v, s.initializer, s))]
        if isinstance(s, ast.ConstDecl):
            t = self.ctx.scope.resolve(s.type)
            self.env.define(s.name, ConstValue(self.ctx.scope.const_eval(s.value, self.ex._const_lookup, t), t))
            return []
        if isinstance(s, ast.IfStatement):
            return [self.if_statement(s)]
        if isinstance(s, ast.SwitchStatement):
            return [self.switch_statement(s)]
        if isinstance(s, ast.ExitStatement):
            return [ExitItem()]
        if isinstance(s, ast.ForStatement):
            return lower_for(self, s)
        if isinstance(s, ast.ForInStatement):
            return lower_for_in(self, s)
        if isinstance(s, (ast.BreakStatement, ast.ContinueStatement)):
            if not self.in_loop:
                raise fail(s, f"'{'break' if isinstance(s, ast.BreakStatement) else 'continue'}' "
                              "outside a for loop")
            return [BreakItem() if isinstance(s, ast.BreakStatement) else ContinueItem()]
        if isinstance(s, ast.ReturnStatement):
            if s.value is None:
                return [ReturnItem()]
            if self.return_target is None:
                raise fail(s, "return with a value outside a function")
            return [Prims(self.assign_value(self.return_target, s.value, s)), ReturnItem()]
        raise UnsupportedError.at(s.loc, f"statement {type(s).__name__} here")

    def if_statement(self, s: ast.IfStatement) -> Item:
        apply_call = _table_apply_in(s.condition)
        if apply_call is None:
            hoister = CallHoister(self)
            if hoister.has_call(s.condition):
                cond = hoister.value(s.condition)
                rest = ast.IfStatement(loc=s.loc, condition=cond, then=s.then, otherwise=s.otherwise)
                return SubBlock(hoister.items + [self.if_statement(rest)])
        then = self.with_env(self.env.child()).statement(s.then)
        otherwise = self.with_env(self.env.child()).statement(s.otherwise) if s.otherwise else []
        if apply_call is not None:
            call, member, negate = apply_call
            table = self._table_of(call)
            hit = member == "hit"
            if negate:
                hit = not hit
            return HitItem(table, call, then, otherwise) if hit else HitItem(table, call, otherwise, then)
        return IfItem(self.ex.lower_bool(s.condition), then, otherwise)

    def _hoist_calls(self, s: ast.Statement) -> Optional[list[Item]]:
        """``s`` preceded by the calls inside its expressions (see `call_order`), or None when
        it has none."""
        hoister = CallHoister(self)
        if isinstance(s, ast.CompoundAssignmentStatement) and hoister.has_call(s.target):
            # P4 evaluates the target once: its calls run (and its indices are saved) once, then
            # the right-hand side; the read and the write use that one place
            target = hoister.target(s.target, save_indices=True)
            rest = ast.AssignmentStatement(loc=s.loc, target=target, value=ast.BinaryExpression(
                loc=s.value.loc, op=s.op, left=target, right=hoister.value(s.rhs)))
        elif isinstance(s, ast.AssignmentStatement) and hoister.has_call(s):
            target = hoister.target(s.target, save_indices=hoister.has_call(s.value))
            rest: ast.Statement = dataclasses.replace(s, target=target, value=hoister.value(s.value))
        elif isinstance(s, ast.VariableDecl) and s.initializer is not None and hoister.has_call(s.initializer):
            rest = dataclasses.replace(s, initializer=hoister.value(s.initializer))
        elif isinstance(s, ast.ReturnStatement) and s.value is not None and hoister.has_call(s.value):
            rest = dataclasses.replace(s, value=hoister.value(s.value))
        elif isinstance(s, ast.SwitchStatement) and not _is_action_run(s.expression) and \
                hoister.has_call(s.expression):
            rest = dataclasses.replace(s, expression=hoister.value(s.expression))
        elif isinstance(s, ast.MethodCallStatement) and hoister.has_call(s.call.args):
            rest = dataclasses.replace(s, call=hoister.call(s.call, want_result=False))
        else:
            return None
        return [SubBlock(hoister.items + self.statement(rest))]

    def switch_statement(self, s: ast.SwitchStatement) -> Item:
        e = s.expression
        if isinstance(e, ast.MemberExpression) and e.member == "action_run" and \
                isinstance(e.expr, ast.MethodCallExpression):
            table = self._table_of(e.expr)
            item = SwitchItem(table, e.expr)
            pending: list[str] = []
            for case in s.cases:
                if isinstance(case.label, ast.DefaultExpression):
                    body = self.with_env(self.env.child()).statement(case.body) if case.body else []
                    item.default = body
                    pending = []
                    continue
                if not isinstance(case.label, ast.PathExpression):
                    raise fail(case.label, "switch labels must be action names")
                pending.append(case.label.name)
                if case.body is not None:
                    body = self.with_env(self.env.child()).statement(case.body)
                    item.cases.append((pending, body))
                    pending = []
            return item
        # switch on a value: a chain of conditionals
        subject, st = self.ex.lower(e)
        chain: list[Item] = []
        default: list[Item] = []
        pending_labels: list[dict] = []
        cases: list[tuple[list[dict], list[Item]]] = []
        for case in s.cases:
            if isinstance(case.label, ast.DefaultExpression):
                default = self.with_env(self.env.child()).statement(case.body) if case.body else []
                continue
            j, _ = self.ex.lower(case.label, st)
            pending_labels.append(j)
            if case.body is not None:
                cases.append((pending_labels, self.with_env(self.env.child()).statement(case.body)))
                pending_labels = []
        chain = default
        for labels, body in reversed(cases):
            cond = None
            for j in labels:
                c = expr("==", subject, j)
                cond = c if cond is None else expr("or", cond, c)
            chain = [IfItem(cond, body, chain)]
        return chain[0] if chain else Prims([])

    def _table_of(self, call: ast.MethodCallExpression) -> TableSymbol:
        m = call.method
        if isinstance(m, ast.MemberExpression) and m.member == "apply":
            v = self.ex.value_of(m.expr)
            if isinstance(v, TableSymbol):
                return v
        raise fail(call, "expected a table's apply()")

    # ------------------------------------------------------------------ assignments
    def assignment(self, target: ast.Expression, value: ast.Expression) -> list[dict]:
        if isinstance(target, ast.SliceExpression):
            hi = int(self.ctx.scope.const_eval(target.high, self.ex._const_lookup))
            lo = int(self.ctx.scope.const_eval(target.low, self.ex._const_lookup))
            inner = target.expr
            while isinstance(inner, ast.SliceExpression):  # x[7:4][1:0] is x[5:4]
                offset = int(self.ctx.scope.const_eval(inner.low, self.ex._const_lookup))
                hi, lo, inner = hi + offset, lo + offset, inner.expr
            base = self.ex.lvalue(inner)
            if not isinstance(base, (FieldValue, ExprValue)) or not isinstance(base.type, Bits):
                raise fail(target, "slices can only be assigned in bit<> fields")
            width = hi - lo + 1
            v, _ = self.ex.lower(value, Bits(width))
            mask = ((1 << width) - 1) << lo
            full = (1 << base.type.width) - 1
            from p4target.compiler.bmv2_json import hexstr
            old = base.json() if isinstance(base, FieldValue) else self.ex.rvalue(base, target)[0]
            kept = expr("&", old, hexstr(full & ~mask))
            new = expr("&", expr("<<", v, hexstr(lo)), hexstr(mask))
            if isinstance(base, FieldValue):
                return [assign(base.json(), expr("|", kept, new))]
            return self._write(base, expr("|", kept, new))
        dst = self.ex.lvalue(target)
        return self.assign_value(dst, value, target)

    def for_element(self, place: DynamicStackElement, node: Any, step) -> Item:
        """``step(stack[i])`` with a run-time ``i``: BMv2 cannot name that header, so one branch
        per element (the index saved first), as p4c does; an index past the end does nothing."""
        from p4target.compiler.bmv2_json import hexstr
        index = self.ctx.storage.variable("stack_index", Bits(32), node)
        chain: list[Item] = []
        for i in reversed(range(len(place.stack.elements))):
            element = HeaderValue(place.stack.elements[i], place.stack.type.element)
            chain = [IfItem(expr("==", index.json(), hexstr(i)), [Prims(step(element))], chain)]
        return SubBlock([Prims([assign(index.json(), place.index_json)])] + chain)

    def _write(self, dst: ExprValue, value: dict) -> list[dict]:
        """Assign a run-time stack element's field: each element takes ``value`` if the index
        (saved first) names it, else keeps its own; an index past the end writes nothing."""
        if not isinstance(dst, DynamicStackField):
            return [assign(dst.json, value)]
        from p4target.compiler.bmv2_json import hexstr
        index = self.ctx.storage.variable("stack_index", Bits(32), None)
        out = [assign(index.json(), dst.index_json)]
        for k, f in enumerate(dst.element_fields()):
            out.append(assign(f, expr("?", value, f, cond=expr("==", index.json(), hexstr(k)))))
        return out

    def assign_value(self, dst: Value, value: ast.Expression, node: Any) -> list[dict]:
        if isinstance(dst, FieldValue):
            j, t = self.ex.lower(value, dst.type)
            return [_assign_field(dst, to_data(j, t), node)]
        if isinstance(dst, ExprValue):  # dynamic stack field
            j, t = self.ex.lower(value, dst.type)
            return self._write(dst, to_data(j, t))
        if isinstance(value, (ast.ListExpression, ast.StructExpression)):
            return self._assign_initializer(dst, value, node)
        src = self.ex.value_of(value)
        return self.copy(dst, src, node)

    def copy(self, dst: Value, src: Value, node: Any) -> list[dict]:
        if isinstance(dst, HeaderValue) and isinstance(src, HeaderValue):
            if dst.metadata or src.metadata:
                return [assign(dst.field(f).json(), src.field(f).json()) for f, _ in dst.type.fields]
            return [prim("assign_header", {"type": "header", "value": dst.name},
                         {"type": "header", "value": src.name})]
        if isinstance(dst, StructValue) and isinstance(src, StructValue):
            out: list[dict] = []
            for name, member in dst.members.items():
                out += self.copy(member, src.members[name], node)
            return out
        if isinstance(dst, FieldValue):
            j, t = self.ex.rvalue(src, node, dst.type)
            return [_assign_field(dst, to_data(j, t), node)]
        if isinstance(dst, ExprValue):  # dynamic stack field
            j, t = self.ex.rvalue(src, node, dst.type)
            return self._write(dst, to_data(j, t))
        if isinstance(dst, StackValue) and isinstance(src, StackValue):
            return [prim("assign_header_stack", {"type": "header_stack", "value": dst.name},
                         {"type": "header_stack", "value": src.name})]
        if isinstance(dst, UnionValue) and isinstance(src, UnionValue):
            return [prim("assign_union", {"type": "header_union", "value": dst.name},
                         {"type": "header_union", "value": src.name})]
        raise fail(node, "incompatible assignment")

    def _assign_initializer(self, dst: Value, value: Any, node: Any) -> list[dict]:
        if isinstance(dst, HeaderValue):
            names = [f for f, _ in dst.type.fields]
            out = [] if dst.metadata else [prim("add_header", {"type": "header", "value": dst.name})]
            for fname, e in _initializer_pairs(value, names, node):
                out += self.assign_value(dst.field(fname), e, node)
            return out
        if isinstance(dst, StructValue):
            out = []
            for fname, e in _initializer_pairs(value, list(dst.members), node):
                out += self.assign_value(dst.members[fname], e, node)
            return out
        raise fail(node, "initializer list assigned to a non-struct value")

    # ------------------------------------------------------------------ calls
    def call(self, c: ast.MethodCallExpression) -> list[Item]:
        from p4target.compiler import externs
        m = c.method
        if isinstance(m, ast.MemberExpression):
            base_expr = m.expr
            base = self.ex.value_of(base_expr) if not (
                isinstance(base_expr, ast.MemberExpression) and base_expr.member == "next") else None
            if isinstance(base, TableSymbol) and m.member == "apply":
                return [ApplyTable(base, c)]
            if (base is None or isinstance(base, TypeValue)) and m.member == "apply" \
                    and isinstance(m.expr, ast.PathExpression) \
                    and m.expr.name in self.ctx.scope.controls:  # direct type invocation
                decl = self.ctx.scope.controls[m.expr.name]
                if decl.ctor_params:
                    raise fail(c, f"control '{decl.name}' has constructor parameters; instantiate it")
                base = BlockInstance(decl, self.control.qualify(m.expr.name))
            if (base is None or isinstance(base, TypeValue)) and m.member == "apply" \
                    and isinstance(m.expr, ast.PathExpression) and m.expr.name in self.ctx.scope.parsers:
                raise UnsupportedError.at(c.loc, "sub-parser calls outside a parser state's top level")
            if isinstance(base, BlockInstance) and m.member == "apply":
                return [self.inline_block(base, c)]
            if isinstance(base, (HeaderValue, DynamicStackElement)) and m.member in ("setValid", "setInvalid"):
                op = "add_header" if m.member == "setValid" else "remove_header"
                if isinstance(base, DynamicStackElement):
                    return [self.for_element(base, c, lambda h: [prim(op, {"type": "header", "value": h.name})])]
                return [Prims([prim(op, {"type": "header", "value": base.name})])]
            if isinstance(base, StackValue) and m.member in ("push_front", "pop_front"):
                if base.unions is not None:
                    raise UnsupportedError.at(c.loc, f"{m.member} on a stack of header unions")
                n = int(self.ctx.scope.const_eval(c.args[0], self.ex._const_lookup))
                from p4target.compiler.bmv2_json import hexstr
                return [Prims([prim("push" if m.member == "push_front" else "pop",
                                    {"type": "header_stack", "value": base.name}, hexstr(n))])]
            if isinstance(base, ExternInstance):
                return [Prims(externs.method_call(self, base, m.member, c))]
            if isinstance(base, PacketValue) or base is None:
                return externs.packet_call(self, c)
            raise fail(c, f"cannot call '{m.member}' here")
        if isinstance(m, ast.PathExpression):
            v = self.env.lookup(m.name)
            if isinstance(v, ActionSymbol):
                return self.inline_action(v, c)
            if m.name in self.ctx.scope.extern_functions:
                return [Prims(externs.function_call(self, m.name, c))]
            if m.name in self.ctx.scope.functions:
                return [self.inline_function(c, None)]
        raise fail(c, "unknown method or function")

    def bind_args(self, params: tuple, args: tuple, node: Any) -> list[tuple[ast.Parameter, Optional[ast.Expression]]]:
        """Pair parameters with positional or named arguments."""
        named = {a.name: a.value for a in args if isinstance(a, ast.NamedArgument)}
        positional = [a for a in args if not isinstance(a, ast.NamedArgument)]
        if len(positional) > len(params):
            raise fail(node, f"too many arguments ({len(positional)} for {len(params)})")
        out = []
        for i, p in enumerate(params):
            if i < len(positional):
                out.append((p, positional[i]))
            elif p.name in named:
                out.append((p, named.pop(p.name)))
            elif p.default is not None:
                out.append((p, p.default))
            else:
                out.append((p, None))
        if named:
            raise fail(node, f"no parameter named '{next(iter(named))}'")
        return [(p, self._dont_care(p) if isinstance(a, ast.DontCareExpression) else a) for p, a in out]

    def _dont_care(self, p: ast.Parameter) -> ast.Expression:
        """The don't-care argument ``_``: a fresh variable of the parameter's type, written and
        never read (p4c's DontcareArgs does the same)."""
        hidden = self.ctx.fresh(f"__dontcare_{p.name}")
        self.env.define(hidden, self.ctx.storage.variable(f"dontcare_{p.name}", self.ctx.scope.resolve(p.type), p))
        return ast.PathExpression(loc=p.loc, name=hidden)

    def _in_argument(self, a: ast.Expression, t: Any) -> Value:
        """An ``in`` argument as the callee sees it: aggregates by reference, scalars as an
        expression of the parameter's type (so a literal gets the parameter's width)."""
        v = self.ex.value_of(a) if isinstance(a, (ast.PathExpression, ast.MemberExpression)) else None
        if isinstance(v, (HeaderValue, StructValue, StackValue, UnionValue)):
            return v
        j, jt = self.ex.lower(a, t)
        return ExprValue(j, t if not isinstance(jt, Bool) else jt)

    def inline_action(self, sym: ActionSymbol, c: ast.MethodCallExpression) -> list[Item]:
        if self.block_kind == "control" and not self.in_parser:
            data = [(p.name, self.ctx.scope.resolve(p.type)) for p in sym.decl.params if p.direction is None]
            self.ctx.direct_actions.setdefault(sym.name, [(name, bit_width(t)) for name, t in data])
            self.ctx.action_param_types.setdefault(sym.name, [new_type_name(t) for _, t in data])
            self.ctx.action_annotations.setdefault(sym.name, self.ctx.annotations_text(sym.decl.annotations))
        env = self.env.child()
        pairs = self.bind_args(sym.decl.params, c.args, c)
        for p, a in pairs:
            if a is None:
                raise fail(c, f"missing argument for parameter '{p.name}' of action '{sym.decl.name}'")
        copy_in, copy_out = self.bind_parameters(pairs, env, c, sym.decl.name)
        lowering = StatementLowering(self.ctx, env, self.control, self.in_parser, "action")
        return [copied_call(copy_in, lowering.block(sym.decl.body.statements), copy_out)]

    def bind_parameters(self, pairs: list[tuple[ast.Parameter, ast.Expression]], env: Env, node: Any,
                        callee: str) -> tuple[list[dict], list[dict]]:
        """P4's copy-in/copy-out: each parameter becomes a fresh variable in ``env`` (``in`` and
        ``inout`` ones start as their argument, ``out`` headers invalid); returns the copy-in
        primitives and the copy-out ones (``out``/``inout`` back to their arguments, in order).
        Constant ``in`` arguments are used as they are."""
        copy_in: list[dict] = []
        copy_out: list[dict] = []
        for p, a in pairs:
            t = self.ctx.scope.resolve(p.type)
            if p.direction in ("out", "inout") and isinstance(a, ast.SliceExpression):
                # a slice argument: copied like a value, written back as a slice assignment
                param = self.ctx.storage.variable(f"{callee}_{p.name}", t, p)
                if p.direction == "inout":
                    copy_in += self.assign_value(param, a, node)
                hidden = self.ctx.fresh(f"__{callee}_{p.name}")
                self.env.define(hidden, param)
                copy_out += self.assignment(a, ast.PathExpression(loc=a.loc, name=hidden))
                env.define(p.name, param)
                continue
            if p.direction in ("out", "inout"):
                arg = self.ex.lvalue(a)
                if isinstance(arg, HeaderValue) and arg.metadata:  # standard_metadata: by reference,
                    env.define(p.name, arg)                         # the externs take it as is
                    continue
                param = self.ctx.storage.variable(f"{callee}_{p.name}", t, p)
                copy_in += self.copy(param, arg, node) if p.direction == "inout" else _invalidate(param)
                copy_out += self.copy(arg, param, node)
            elif isinstance(a, (ast.IntLiteral, ast.BoolLiteral)):
                j, jt = self.ex.lower(a, t)
                param = ExprValue(j, t if not isinstance(jt, Bool) else jt)
            else:
                param = self.ctx.storage.variable(f"{callee}_{p.name}", t, p)
                copy_in += self.assign_value(param, a, node)
            env.define(p.name, param)
        return copy_in, copy_out

    def function_of(self, e: Any) -> Optional[ast.FunctionDecl]:
        """The P4 function ``e`` calls, if it is such a call."""
        if isinstance(e, ast.MethodCallExpression) and isinstance(e.method, ast.PathExpression) \
                and self.env.lookup(e.method.name) is None:
            return self.ctx.scope.functions.get(e.method.name)
        return None

    def inline_function(self, c: ast.MethodCallExpression, target: Optional[Value]) -> Item:
        """A P4 function call, inlined with copy-in/copy-out; ``return e`` assigns ``target``
        and leaves the body."""
        decl = self.function_of(c)
        assert decl is not None
        if target is None and decl.prototype.return_type is not None:
            t = self.ctx.scope.resolve(decl.prototype.return_type)
            if not isinstance(t, VoidT):  # called as a statement: the value is dropped
                target = self.ctx.storage.variable(f"{decl.name}_result", t, c)
        pairs = self.bind_args(decl.prototype.params, c.args, c)
        for p, a in pairs:
            if a is None:
                raise fail(c, f"missing argument for parameter '{p.name}' of function '{decl.name}'")
        env = self.ctx.global_env.child()
        copy_in, copy_out = self.bind_parameters(pairs, env, c, decl.name)
        body = StatementLowering(self.ctx, env, self.control, self.in_parser, self.block_kind,
                                 return_target=target).block(decl.body.statements)
        return copied_call(copy_in, body, copy_out)

    def constructor_bindings(self, decl: Any, args: tuple, node: Any) -> dict[str, Value]:
        """Values of a parser's or control's constructor parameters: instances passed by name
        (controls, parsers, externs) or compile-time constants of the parameter's type."""
        out: dict[str, Value] = {}
        for p, a in self.bind_args(decl.ctor_params, args, node):
            if a is None:
                raise fail(node, f"missing constructor argument for parameter '{p.name}' of '{decl.name}'")
            v = self.env.lookup(a.name) if isinstance(a, ast.PathExpression) else None
            if isinstance(v, (BlockInstance, ExternInstance)):
                out[p.name] = v
                continue
            t = self.ctx.scope.resolve(p.type)
            try:
                out[p.name] = ConstValue(self.ctx.scope.const_eval(a, self.ex._const_lookup, t), t)
            except CompileError:
                raise UnsupportedError.at(a.loc, "constructor argument that is neither a constant "
                                                 "nor a named instance") from None
        return out

    def inline_block(self, inst: BlockInstance, c: ast.MethodCallExpression) -> Item:
        from p4target.compiler.controls import ControlLowering
        if not isinstance(inst.decl, ast.ControlDecl):
            raise UnsupportedError.at(c.loc, "sub-parser calls outside a parser state's top level")
        bindings: dict[str, Value] = dict(inst.ctor)
        for p, a in self.bind_args(inst.decl.params, c.args, c):
            if a is None:
                raise fail(c, f"missing argument for parameter '{p.name}'")
            bindings[p.name] = self.ex.lvalue(a) if p.direction in ("out", "inout") \
                else self._in_argument(a, self.ctx.scope.resolve(p.type))
        sub = ControlLowering(self.ctx, inst.decl, inst.name, bindings)
        return SubBlock(sub.apply_items())


# --------------------------------------------------------------------------- helpers
def _table_apply_in(cond: ast.Expression) -> Optional[tuple[ast.MethodCallExpression, str, bool]]:
    negate = False
    e = cond
    while isinstance(e, ast.UnaryExpression) and e.op == "!":
        negate = not negate
        e = e.operand
    if isinstance(e, ast.MemberExpression) and e.member in ("hit", "miss") and \
            isinstance(e.expr, ast.MethodCallExpression) and isinstance(e.expr.method, ast.MemberExpression) \
            and e.expr.method.member == "apply":
        return e.expr, e.member, negate
    return None


def _assign_field(dst: FieldValue, src: dict, node: Any) -> dict:
    """``dst = src``; a varbit field takes the source's size too (BMv2's ``assign_VL``, which p4c
    uses for varbit fields and variables; a parser writes it as ``set``)."""
    if isinstance(dst.type, VarbitT):
        if src.get("type") != "field":
            raise fail(node, "a varbit value can only be assigned from a varbit field or variable")
        return prim("assign_VL", dst.json(), src)
    return assign(dst.json(), src)


def copied_call(copy_in: list[dict], body: list[Item], copy_out: list[dict]) -> Item:
    """An inlined call: copy-in, the body (its ``return`` leaves just the body), copy-out; an
    ``exit`` in the body copies out first, as p4c does for actions."""
    return SubBlock([Prims(copy_in), SubBlock(_copy_out_before_exit(body, copy_out)), Prims(copy_out)])


def _copy_out_before_exit(items: list[Item], copy_out: list[dict]) -> list[Item]:
    if not copy_out:
        return items
    out: list[Item] = []
    for it in items:
        if isinstance(it, ExitItem):
            out += [Prims(list(copy_out)), it]
        elif isinstance(it, SubBlock):
            out.append(SubBlock(_copy_out_before_exit(it.items, copy_out)))
        elif isinstance(it, (IfItem, HitItem)):
            out.append(dataclasses.replace(it, then=_copy_out_before_exit(it.then, copy_out),
                                           otherwise=_copy_out_before_exit(it.otherwise, copy_out)))
        elif isinstance(it, SwitchItem):
            out.append(dataclasses.replace(
                it, cases=[(labels, _copy_out_before_exit(body, copy_out)) for labels, body in it.cases],
                default=None if it.default is None else _copy_out_before_exit(it.default, copy_out)))
        else:
            out.append(it)
    return out


def _invalidate(v: Value) -> list[dict]:
    """An ``out`` parameter's start: its headers invalid (scalars are left undefined)."""
    if isinstance(v, HeaderValue) and not v.metadata:
        return [prim("remove_header", {"type": "header", "value": v.name})]
    if isinstance(v, (StructValue, UnionValue)):
        return [p for m in v.members.values() for p in _invalidate(m)]
    if isinstance(v, StackValue):
        return [prim("remove_header", {"type": "header", "value": e}) for e in v.elements]
    return []


def _is_action_run(e: ast.Expression) -> bool:
    return isinstance(e, ast.MemberExpression) and e.member == "action_run" and \
        isinstance(e.expr, ast.MethodCallExpression)


def _initializer_pairs(value: Any, names: list[str], node: Any) -> list[tuple[str, ast.Expression]]:
    if isinstance(value, ast.ListExpression):
        if len(value.elements) != len(names):
            raise fail(node, f"initializer has {len(value.elements)} values for {len(names)} fields")
        return list(zip(names, value.elements))
    pairs = [(f.name, f.value) for f in value.fields]
    for n, _ in pairs:
        if n not in names:
            raise fail(node, f"no field named '{n}'")
    return pairs


def _merge(items: list[Item]) -> list[Item]:
    """Join neighbouring primitive runs."""
    out: list[Item] = []
    for it in items:
        if isinstance(it, Prims) and out and isinstance(out[-1], Prims):
            out[-1] = Prims(out[-1].primitives + it.primitives)
        elif isinstance(it, Prims) and not it.primitives:
            continue
        else:
            out.append(it)
    return out


def predicate(ctx: Context, items: list[Item], node: Any, pred: Optional[dict] = None) -> list[dict]:
    """Flatten structured items into straight-line primitives (BMv2 actions have no branches):
    each branch's assignments become ``dst = cond ? value : dst``; conditions are saved first.
    A ``return`` under a condition sets a flag that guards the rest of its action body."""
    return _Predicator(ctx, node).body(items, pred)


class _Frame:
    """One inlined body: its return flag (created on the first conditional return)."""

    def __init__(self) -> None:
        self.flag: Optional[dict] = None


class _Predicator:
    def __init__(self, ctx: Context, node: Any) -> None:
        self.ctx = ctx
        self.node = node

    def _unsupported(self, what: str, hint: str = "") -> UnsupportedError:
        return UnsupportedError.at(getattr(self.node, "loc", None), what, hint)

    def body(self, items: list[Item], pred: Optional[dict]) -> list[dict]:
        frame = _Frame()
        out = self.items(items, pred, frame, top=True)
        if frame.flag is not None:
            out.insert(0, assign(frame.flag, {"type": "hexstr", "value": "0x0"}))
        return out

    def _guard(self, pred: Optional[dict], frame: _Frame) -> Optional[dict]:
        if frame.flag is None:
            return pred
        live = expr("not", None, expr("d2b", None, frame.flag))
        return live if pred is None else expr("and", pred, live)

    def items(self, items: list[Item], pred: Optional[dict], frame: _Frame, top: bool) -> list[dict]:
        out: list[dict] = []
        for it in items:
            guard = self._guard(pred, frame)
            if isinstance(it, ReturnItem):
                if top:
                    break  # everything after it in this body is dead
                if frame.flag is None:
                    frame.flag = {"type": "field", "value": ["scalars", self.ctx.out.add_scalar("returned", Bool())]}
                out.append(assign(frame.flag, expr("?", {"type": "hexstr", "value": "0x1"}, frame.flag, cond=guard)))
            elif isinstance(it, SubBlock):
                out += self.body(it.items, guard)
            elif isinstance(it, Prims):
                for p in it.primitives:
                    if guard is None:
                        out.append(p)
                    elif p["op"] == "assign":
                        dst, src = p["parameters"]
                        out.append(assign(dst, expr("?", src, dst, cond=guard)))
                    elif p["op"] == "verify":  # parser only: a check that holds when skipped
                        check, error = p["parameters"]
                        out.append({"op": "verify", "parameters": [expr("or", expr("not", None, guard), check), error]})
                    else:
                        raise self._unsupported(f"'{p['op']}' under a condition inside an action",
                                                "move the condition into the control's apply block")
            elif isinstance(it, IfItem):
                cond = it.cond if guard is None else expr("and", guard, it.cond)
                els = expr("not", None, it.cond)
                els = els if guard is None else expr("and", guard, els)
                f_then = {"type": "field", "value": ["scalars", self.ctx.out.add_scalar("cond", Bool())]}
                f_else = {"type": "field", "value": ["scalars", self.ctx.out.add_scalar("cond", Bool())]}
                out.append(assign(f_then, expr("b2d", None, cond)))
                out.append(assign(f_else, expr("b2d", None, els)))
                out += self.items(it.then, expr("d2b", None, f_then), frame, top=False)
                out += self.items(it.otherwise, expr("d2b", None, f_else), frame, top=False)
            elif isinstance(it, ExitItem):
                if guard is not None:
                    raise self._unsupported("exit under a condition inside an action")
                out.append(prim("exit"))
            else:
                raise fail(self.node, "tables cannot be applied inside an action")
        return out


def action_primitives(ctx: Context, items: list[Item], node: Any) -> list[dict]:
    """A table action's body as BMv2 primitives: predicated assignments when every branch only
    assigns, else BMv2's `_jump_if_zero` / `_jump` (extern calls or exit under a condition)."""
    if _branches_do_more_than_assign(items, inside_branch=False):
        return _Jumps(ctx, node).emit_body(items)
    return predicate(ctx, items, node)


def _branches_do_more_than_assign(items: list[Item], inside_branch: bool) -> bool:
    for it in items:
        if isinstance(it, LoopItem):
            return True
        if isinstance(it, SubBlock) and _branches_do_more_than_assign(it.items, inside_branch):
            return True
        if isinstance(it, IfItem) and (_branches_do_more_than_assign(it.then, True) or
                                       _branches_do_more_than_assign(it.otherwise, True)):
            return True
        if inside_branch and isinstance(it, ExitItem):
            return True
        if inside_branch and isinstance(it, Prims) and any(p["op"] != "assign" for p in it.primitives):
            return True
    return False


class _Jumps:
    """Structured items -> primitives with jumps to absolute primitive indices."""

    def __init__(self, ctx: Context, node: Any) -> None:
        self.ctx = ctx
        self.node = node
        self.out: list[dict] = []
        self.loops: list[tuple[list[int], list[int]]] = []  # (break jumps, continue jumps)

    def _here(self) -> dict:
        from p4target.compiler.bmv2_json import hexstr
        return hexstr(len(self.out))

    def emit_body(self, items: list[Item]) -> list[dict]:
        returns: list[int] = []
        self._emit(items, returns)
        for i in returns:
            self.out[i]["parameters"] = [self._here()]
        return self.out

    def _emit(self, items: list[Item], returns: list[int]) -> None:
        for it in items:
            if isinstance(it, Prims):
                self.out += it.primitives
            elif isinstance(it, SubBlock):
                inner: list[int] = []
                self._emit(it.items, inner)
                for i in inner:
                    self.out[i]["parameters"] = [self._here()]
            elif isinstance(it, IfItem):
                branch = len(self.out)
                self.out.append({"op": "_jump_if_zero", "parameters": [expr("b2d", None, it.cond), None]})
                self._emit(it.then, returns)
                if it.otherwise:
                    skip = len(self.out)
                    self.out.append({"op": "_jump", "parameters": [None]})
                    self.out[branch]["parameters"][1] = self._here()
                    self._emit(it.otherwise, returns)
                    self.out[skip]["parameters"] = [self._here()]
                else:
                    self.out[branch]["parameters"][1] = self._here()
            elif isinstance(it, LoopItem):
                self._emit_loop(it, returns)
            elif isinstance(it, (BreakItem, ContinueItem)):
                breaks, continues = self.loops[-1]
                (breaks if isinstance(it, BreakItem) else continues).append(len(self.out))
                self.out.append({"op": "_jump", "parameters": [None]})
            elif isinstance(it, ReturnItem):
                returns.append(len(self.out))
                self.out.append({"op": "_jump", "parameters": [None]})
            elif isinstance(it, ExitItem):
                self.out.append(prim("exit"))
            else:
                raise fail(self.node, "tables cannot be applied inside an action")

    def _emit_loop(self, loop: LoopItem, returns: list[int]) -> None:
        """init; top: if !cond goto end; body; (continue lands here) update; goto top; end:"""
        from p4target.compiler.bmv2_json import hexstr
        self._emit(loop.init, returns)
        top = len(self.out)
        test = None
        if loop.cond is not None:
            test = len(self.out)
            self.out.append({"op": "_jump_if_zero", "parameters": [expr("b2d", None, loop.cond), None]})
        self.loops.append(([], []))
        self._emit(loop.body, returns)
        breaks, continues = self.loops.pop()
        for i in continues:
            self.out[i]["parameters"] = [self._here()]
        self._emit(loop.update, returns)
        self.out.append({"op": "_jump", "parameters": [hexstr(top)]})
        if test is not None:
            self.out[test]["parameters"][1] = self._here()
        for i in breaks:
            self.out[i]["parameters"] = [self._here()]
