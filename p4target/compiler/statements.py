"""Lowering of P4 statements, and of control bodies, to the IR of `ir` (`Item`s).

`StatementLowering` lowers the statements of one block (control apply, action body, parser
state, function); `ControlLowering` declares a control's locals and lowers its apply block, also
for a sub-control applied inline (a control and the statements in it lower each other).
"""
from __future__ import annotations

import dataclasses
import operator
from typing import Any

from p4target.compiler import ast, externs
from p4target.compiler.bmv2_json import expr, hexstr
from p4target.compiler.call_order import CallHoister
from p4target.compiler.context import Context
from p4target.compiler.expressions import Env, ExpressionLowering, to_data
from p4target.compiler.ir import (ApplyTable, BreakItem, ContinueItem, ExitItem, HitItem, IfItem, Item,
                                  Prims, ReturnItem, SubBlock, SwitchItem, assign, merge, prim)
from p4target.compiler.loops import lower_for, lower_for_in
from p4target.compiler.semantics import fail
from p4target.compiler.types import Bits, Bool, BlockT, ExternT, VarbitT, VoidT, bit_width, new_type_name
from p4target.compiler.values import (ActionSymbol, BlockInstance, ConstValue, ControlContext,
                                      DynamicStackElement, DynamicStackField, ExprValue, ExternInstance, FieldValue, HeaderValue,
                                      PacketValue, StackValue, StructValue,
                                      TableSymbol, TypeValue, UnionValue, Value)
from p4target.errors import CompileError, UnsupportedError


class StatementLowering:
    """Lowers statements of one block (control apply, action body, parser state)."""

    def __init__(self, ctx: Context, env: Env, control: ControlContext | None,
                 in_parser: bool = False, block_kind: str = "control",
                 return_target: Value | None = None) -> None:
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
        return merge(items)

    def statement(self, s: ast.Statement) -> list[Item]:
        items = self._statement(s)
        checks = self.ex.take_bounds_checks()
        items = [Prims(checks)] + items if checks else items
        _locate(items, s.loc)
        return items

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
            return self.if_statement(s)
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

    def if_statement(self, s: ast.IfStatement) -> list[Item]:
        """An ``if``: an `IfItem` (a `HitItem` on a table's hit/miss), or, when its condition
        is a constant, the live branch's own items in its place.

        The live branch is spliced into the enclosing block, not wrapped in a `SubBlock`: a
        `return` in it leaves the enclosing action, function or control and an ``exit`` ends
        the pipeline's controls, exactly as when the ``if`` is kept (P4 gives a block statement
        no meaning of its own for ``return``/``exit``; p4c's constant folding likewise puts the
        live branch where the ``if`` was). The dead branch is not lowered at all, so its direct
        action calls do not reach P4Info, as in p4c."""
        apply_call = _table_apply_in(s.condition)
        if apply_call is None:
            hoister = CallHoister(self)
            if hoister.has_call(s.condition):
                # the calls run first, then the `if` on their saved result, in the same block
                cond = hoister.value(s.condition)
                rest = ast.IfStatement(loc=s.loc, condition=cond, then=s.then, otherwise=s.otherwise)
                return hoister.items + self.if_statement(rest)
        cond = self.ex.lower_bool(s.condition) if apply_call is None else None
        truth = constant_truth(cond) if cond is not None else None
        if truth is not None:
            live = s.then if truth else s.otherwise
            return self.with_env(self.env.child()).statement(live) if live else []
        then = self.with_env(self.env.child()).statement(s.then)
        otherwise = self.with_env(self.env.child()).statement(s.otherwise) if s.otherwise else []
        if apply_call is not None:
            call, member, negate = apply_call
            table = self._table_of(call)
            hit = member == "hit"
            if negate:
                hit = not hit
            return [HitItem(table, call, then, otherwise) if hit else HitItem(table, call, otherwise, then)]
        return [IfItem(cond, then, otherwise)]

    def _hoist_calls(self, s: ast.Statement) -> list[Item] | None:
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
        # in the statement's own block (a `SubBlock` would stop a `return` in `rest` there)
        return hoister.items + self.statement(rest)

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
        if self.in_parser and isinstance(dst, (HeaderValue, StructValue)) and _is_lookahead(value):
            return self._assign_lookahead(dst, value)
        src = self.ex.value_of(value)
        return self.copy(dst, src, node)

    def _assign_lookahead(self, dst: Value, call: ast.MethodCallExpression) -> list[dict]:
        """``x = pkt.lookahead<T>()`` for a header or struct ``x``: each field is set from the
        bits ahead at its offset (a header becomes valid), as p4c lowers it for BMv2."""
        if not call.type_args:
            raise fail(call, "lookahead needs a type argument")
        externs.lookahead_width(self.ctx.scope.resolve(call.type_args[0]), call)  # no varbit
        out: list[dict] = []
        offset = 0

        def fill(v: Value) -> None:
            nonlocal offset
            if isinstance(v, HeaderValue):
                if not v.metadata:
                    out.append(prim("add_header", {"type": "header", "value": v.name}))
                for fname, _ in v.type.fields:
                    fill(v.field(fname))
            elif isinstance(v, StructValue):
                for member in v.members.values():
                    fill(member)
            elif isinstance(v, FieldValue):
                width = bit_width(v.type)
                out.append(assign(v.json(), {"type": "lookahead", "value": [offset, width]}))
                offset += width
            else:
                raise fail(call, "lookahead into this type")
        fill(dst)
        return out

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

    def bind_args(self, params: tuple, args: tuple, node: Any) -> list[tuple[ast.Parameter, ast.Expression | None]]:
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
        if isinstance(v, (HeaderValue, StructValue, StackValue, UnionValue, PacketValue)):
            return v  # (a packet_in/packet_out: the deparser's or parser's own)
        j, jt = self.ex.lower(a, t)
        return ExprValue(j, t if not isinstance(jt, Bool) else jt)

    def inline_action(self, sym: ActionSymbol, c: ast.MethodCallExpression) -> list[Item]:
        if self.block_kind == "control" and not self.in_parser:
            data = [(p.name, self.ctx.scope.resolve(p.type)) for p in sym.decl.params if p.direction is None]
            self.ctx.direct_actions.setdefault(sym.name, [(name, bit_width(t)) for name, t in data])
            if ast.find_annotation(sym.decl.annotations, "hidden") is not None:
                self.ctx.hidden.add(sym.name)
            self.ctx.action_param_types.setdefault(sym.name, [new_type_name(t) for _, t in data])
            self.ctx.action_annotations.setdefault(sym.name, self.ctx.annotations_text(sym.decl.annotations))
            self.ctx.action_param_annotations.setdefault(
                sym.name, [self.ctx.annotations_text(p.annotations) for p in sym.decl.params if p.direction is None])
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

    def function_of(self, e: Any) -> ast.FunctionDecl | None:
        """The P4 function ``e`` calls, if it is such a call."""
        if isinstance(e, ast.MethodCallExpression) and isinstance(e.method, ast.PathExpression) \
                and self.env.lookup(e.method.name) is None:
            return self.ctx.scope.functions.get(e.method.name)
        return None

    def inline_function(self, c: ast.MethodCallExpression, target: Value | None) -> Item:
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
        if not isinstance(inst.decl, ast.ControlDecl):
            raise UnsupportedError.at(c.loc, "sub-parser calls outside a parser state's top level")
        bindings: dict[str, Value] = dict(inst.ctor)
        for p, a in self.bind_args(inst.decl.params, c.args, c):
            if a is None:
                raise fail(c, f"missing argument for parameter '{p.name}'")
            bindings[p.name] = self.ex.lvalue(a) if p.direction in ("out", "inout") \
                else self._in_argument(a, self.ctx.scope.resolve(p.type))
        # a control applied from a checksum control or the deparser plays that block's role
        # (its update_checksum/emit calls are that block's), as p4c inlines it there
        role = self.block_kind if self.block_kind in _INLINED_ROLES else "control"
        sub = ControlLowering(self.ctx, inst.decl, inst.name, bindings, role)
        return SubBlock(sub.apply_items())


# --------------------------------------------------------------------------- helpers
_INLINED_ROLES = ("verify_checksum", "compute_checksum", "deparser")


def _is_lookahead(e: ast.Expression) -> bool:
    return isinstance(e, ast.MethodCallExpression) and isinstance(e.method, ast.MemberExpression) \
        and e.method.member == "lookahead"


def _table_apply_in(cond: ast.Expression) -> tuple[ast.MethodCallExpression, str, bool] | None:
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


# --------------------------------------------------------------------------- control bodies
class ControlLowering:
    """One control instance: ``prefix`` names its tables, actions and externs."""

    def __init__(self, ctx: Context, decl: ast.ControlDecl, prefix: str,
                 bindings: dict[str, Value], block_kind: str = "control") -> None:
        self.ctx = ctx
        self.decl = decl
        self.control = ControlContext(prefix, decl)
        self.env = ctx.global_env.child(bindings)
        self.block_kind = block_kind
        self.init: list[Item] = []
        sl = StatementLowering(ctx, self.env, self.control, block_kind=block_kind)
        for local in decl.locals:
            self._declare(local, sl)

    def _declare(self, d: ast.Declaration, sl: StatementLowering) -> None:
        ctx = self.ctx
        if isinstance(d, ast.ConstDecl):
            t = ctx.scope.resolve(d.type)
            self.env.define(d.name, ConstValue(ctx.scope.const_eval(d.value, sl.ex._const_lookup, t), t))
        elif isinstance(d, ast.VariableDecl):
            self.init += sl.statement(d)
        elif isinstance(d, ast.ActionDecl):
            self.env.define(d.name, ActionSymbol(d, self.control.qualify(d.name, d.annotations), self.control))
        elif isinstance(d, ast.TableDecl):
            sym = TableSymbol(d, self.control.qualify(d.name, d.annotations), self.control)
            self.env.define(d.name, sym)
            ctx.table_envs[sym.name] = self.env
        elif isinstance(d, ast.InstantiationDecl):
            t = ctx.scope.resolve(d.type)
            name = self.control.qualify(d.name, d.annotations)
            if isinstance(t, ExternT):
                # a control instance applied more than once keeps one object per extern instance
                inst = ctx.externs.get(name)
                if inst is None or inst.decl is not d:
                    inst = externs.instantiate(ctx, d, name, t, sl.ex._const_lookup)
                self.env.define(d.name, inst)
            elif isinstance(t, BlockT) and isinstance(t.decl, ast.ControlDecl):
                self.env.define(d.name, BlockInstance(t.decl, name, d.args,
                                                      sl.constructor_bindings(t.decl, d.args, d)))
            else:
                raise UnsupportedError.at(d.loc, f"instantiation of {t}")
        else:
            raise UnsupportedError.at(d.loc, f"control local {type(d).__name__}")

    def apply_items(self) -> list[Item]:
        sl = StatementLowering(self.ctx, self.env.child(), self.control, block_kind=self.block_kind)
        items = sl.block(self.decl.body.statements)
        return list(self.init) + items


def _locate(items: list, loc: object) -> None:
    """Give the straight-line runs and exits in `items` (nested ones too) that have no source
    position yet the position `loc` of the statement they were lowered from."""
    for it in items:
        if isinstance(it, (Prims, ExitItem)):
            if it.loc is None:
                it.loc = loc
        elif isinstance(it, Item) and dataclasses.is_dataclass(it):
            for f in dataclasses.fields(it):
                value = getattr(it, f.name)
                if isinstance(value, list):
                    _locate([v for v in value if isinstance(v, Item)], loc)
                    for v in value:  # a switch's cases: (labels, items)
                        if isinstance(v, tuple) and v and isinstance(v[-1], list):
                            _locate(v[-1], loc)


_COMPARISONS = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, ">": operator.gt,
                "<=": operator.le, ">=": operator.ge}


def constant_truth(e: dict) -> bool | None:
    """The value of a BMv2 JSON boolean expression made of constants only (``0x1 == 0x2``,
    ``true``, ``not``/``and``/``or`` of those), or None when it reads anything at run time."""
    if e.get("type") == "bool":
        return bool(e["value"])
    if e.get("type") != "expression":
        return None
    v = e["value"]
    op = v.get("op")
    if op in _COMPARISONS and all(side and side.get("type") == "hexstr" for side in (v["left"], v["right"])):
        return _COMPARISONS[op](int(v["left"]["value"], 16), int(v["right"]["value"], 16))
    if op == "not" and v.get("right"):
        inner = constant_truth(v["right"])
        return None if inner is None else not inner
    if op in ("and", "or"):
        left, right = constant_truth(v["left"]), constant_truth(v["right"])
        if left is None or right is None:
            return None
        return (left and right) if op == "and" else (left or right)
    return None
