"""Parsers lowered to BMv2 parse states (extract, set, verify, advance, select transitions)."""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from p4target.compiler import ast, externs
from p4target.compiler.bmv2_json import fresh_name, hexstr
from p4target.compiler.action_body import predicate
from p4target.compiler.call_order import CallHoister
from p4target.compiler.context import Context
from p4target.compiler.expressions import Env, to_data
from p4target.compiler.semantics import fail
from p4target.compiler.statements import StatementLowering
from p4target.compiler.types import Bits, BlockT, Bool, EnumT, ExternT, P4Type, StructT, TupleT, bit_width
from p4target.compiler.values import (BlockInstance, ConstValue, ControlContext, ExprValue, PacketValue,
                                      TypeValue, Value, ValueSetSymbol)
from p4target.errors import UnsupportedError

PARSER_OPS = {"__extract": "extract", "__extract_VL": "extract_VL", "__advance": "advance", "assign": "set",
              "assign_VL": "set", "verify": "verify"}


def range_masks(lo: int, hi: int, width: int) -> list[tuple[int, int]]:
    """Cover ``lo..hi`` exactly with (value, mask) prefix pairs."""
    full = (1 << width) - 1
    out = []
    while lo <= hi:
        size = 1
        while lo % (size * 2) == 0 and lo + size * 2 - 1 <= hi and size * 2 <= (1 << width):
            size *= 2
        out.append((lo, full & ~(size - 1)))
        lo += size
    return out


@dataclass
class _ParserFrame:
    """One parser body being lowered: the top-level parser, or a sub-parser inlined at one of
    its ``apply`` calls (its states renamed; its ``accept`` continues the calling state)."""
    decl: ast.ParserDecl
    env: Env
    control: ControlContext
    states: dict[str, str]            # P4 state name -> BMv2 state name
    accept: str | None             # BMv2 state after ``accept`` (None: the parser ends)
    init_ops: list[dict] = field(default_factory=list)


class ParserLowering:
    """One parser instance lowered to BMv2's ``parsers[0]``; sub-parsers are inlined."""

    def __init__(self, ctx: Context, decl: ast.ParserDecl, prefix: str, bindings: dict[str, Value]) -> None:
        self.ctx = ctx
        self.decl = decl
        self.extra_states: dict[str, dict] = {}
        self._used_names = {s.name for s in decl.states} | {"reject", "noMatch"}
        self.main = self._frame(decl, ctx.global_env.child(bindings), ControlContext(prefix, decl),
                                {s.name: s.name for s in decl.states}, None)

    def _frame(self, decl: ast.ParserDecl, env: Env, control: ControlContext, states: dict[str, str],
               accept: str | None) -> _ParserFrame:
        if "start" not in states:
            raise fail(decl, f"parser '{decl.name}' has no start state")
        frame = _ParserFrame(decl, env, control, states, accept)
        sl = StatementLowering(self.ctx, env, control, in_parser=True, block_kind="parser")
        for d in decl.locals:
            if isinstance(d, (ast.VariableDecl, ast.ConstDecl)):
                for item in sl.statement(d):
                    frame.init_ops += self._ops(predicate(self.ctx, [item], d))
            elif isinstance(d, ast.InstantiationDecl):
                t = self.ctx.scope.resolve(d.type)
                name = control.qualify(d.name, d.annotations)
                if isinstance(t, ExternT):
                    env.define(d.name, externs.instantiate(self.ctx, d, name, t, sl.ex._const_lookup))
                elif isinstance(t, BlockT) and isinstance(t.decl, ast.ParserDecl):
                    env.define(d.name, BlockInstance(t.decl, name, d.args,
                                                     sl.constructor_bindings(t.decl, d.args, d)))
                else:
                    raise UnsupportedError.at(d.loc, f"instantiation of {t} in a parser")
            elif isinstance(d, ast.ValueSetDecl):
                env.define(d.name, self._value_set(d, sl, control))
            else:
                raise UnsupportedError.at(d.loc, f"parser local {type(d).__name__}")
        return frame

    def _value_set(self, d: ast.ValueSetDecl, sl: StatementLowering, control: ControlContext) -> ValueSetSymbol:
        element = self.ctx.scope.resolve(d.element_type)
        widths = _value_set_widths(element)
        if widths is None:
            raise fail(d, f"value_set element type {element} must be bit<>, a serializable enum, "
                          "or a struct/tuple of those")
        size = int(self.ctx.scope.const_eval(d.size, sl.ex._const_lookup))
        name = control.qualify(d.name, d.annotations)
        self.ctx.out.parse_vsets.append({"name": name, "id": len(self.ctx.out.parse_vsets),
                                         "compressed_bitwidth": sum(widths), "max_size": size})
        self.ctx.value_sets[name] = element
        return ValueSetSymbol(d, name, element, size)

    def build(self) -> dict:
        states: list[dict] = []
        # (frame, BMv2 state, statements, transition, node, scope of the P4 state's locals)
        work = [(self.main, st.name, st.statements, st.transition, st, None) for st in self.decl.states]
        while work:
            frame, name, statements, transition, node, env = work.pop(0)
            env = env or frame.env.child()
            split = self._sub_parser_call(frame, statements)
            if split is None:
                state = self._state(frame, env, name, statements, transition, node)
            else:
                i, inst = split
                cont = self._fresh_state(f"{name}_after_{inst.name.rsplit('.', 1)[-1]}")
                sl = StatementLowering(self.ctx, env, frame.control, in_parser=True, block_kind="parser")
                pre_items = sl.block(statements[:i])  # first: the call may use locals declared here
                pre, sub = self._inline(sl, inst, statements[i].call, cont)
                state = self._state(frame, env, name, (), None, node, pre_items=pre_items, pre_ops=pre,
                                    next_state=sub.states["start"])
                work += [(sub, sub.states[st.name], st.statements, st.transition, st, None)
                         for st in sub.decl.states]
                work.append((frame, cont, statements[i + 1:], transition, node, env))
            if frame.states.get("start") == name and frame.init_ops:
                state["parser_ops"] = frame.init_ops + state["parser_ops"]
            states.append(state)
        states += list(self.extra_states.values())
        for i, s in enumerate(states):
            s["id"] = i
            s["parser_ops"] = self._read_lookaheads_first(s["parser_ops"])
        return {"name": "parser", "id": 0, "init_state": "start", "parse_states": states}

    def _read_lookaheads_first(self, ops: list[dict]) -> list[dict]:
        """BMv2 reads ``lookahead`` bits only as a ``set`` source or a select key: one inside a
        larger expression is first ``set`` into a scalar, just before its operation (lookahead
        does not move the packet, so it reads the same bits there)."""
        out: list[dict] = []
        for op in ops:
            reads: list[dict] = []
            params = op["parameters"]
            if op["op"] == "set" and params[1].get("type") == "lookahead":
                out.append(op)
                continue
            op = {**op, "parameters": [self._lookaheads_to_fields(p, reads) for p in params]}
            out += reads + [op]
        return out

    def _lookaheads_to_fields(self, node: Any, reads: list[dict]) -> Any:
        if isinstance(node, list):
            return [self._lookaheads_to_fields(n, reads) for n in node]
        if not isinstance(node, dict):
            return node
        if node.get("type") == "lookahead":
            offset, width = node["value"]
            dst = {"type": "field", "value": ["scalars", self.ctx.out.add_scalar("lookahead_tmp", Bits(width))]}
            reads.append({"op": "set", "parameters": [dst, {"type": "lookahead", "value": [offset, width]}]})
            return dst
        return {k: self._lookaheads_to_fields(v, reads) for k, v in node.items()}

    def _fresh_state(self, base: str) -> str:
        return fresh_name(base, self._used_names)

    def _sub_parser_call(self, frame: _ParserFrame, statements: tuple) -> tuple[int, BlockInstance] | None:
        """(index, instance) of the first statement applying a sub-parser, if any."""
        for i, st in enumerate(statements):
            if not isinstance(st, ast.MethodCallStatement):
                continue
            m = st.call.method
            if not (isinstance(m, ast.MemberExpression) and m.member == "apply"
                    and isinstance(m.expr, ast.PathExpression)):
                continue
            v = frame.env.lookup(m.expr.name)
            if isinstance(v, BlockInstance) and isinstance(v.decl, ast.ParserDecl):
                return i, v
            if (v is None or isinstance(v, TypeValue)) and m.expr.name in self.ctx.scope.parsers:
                # direct type invocation
                return i, BlockInstance(self.ctx.scope.parsers[m.expr.name],
                                        frame.control.qualify(m.expr.name), ())
        return None

    def _inline(self, sl: StatementLowering, inst: BlockInstance, call: ast.MethodCallExpression,
                cont: str) -> tuple[list[dict], _ParserFrame]:
        """Copy-in operations at the call and the frame of the inlined sub-parser (out and inout
        arguments are bound by reference, in arguments copied into temporaries)."""
        bindings: dict[str, Value] = dict(inst.ctor)
        pre: list[dict] = []
        for p, a in sl.bind_args(inst.decl.params, call.args, call):
            if a is None:
                raise fail(call, f"missing argument for parameter '{p.name}' of parser '{inst.decl.name}'")
            if isinstance(p.type, ast.TypeName) and p.type.name == "packet_in":
                bindings[p.name] = PacketValue("packet_in")
            elif p.direction in ("out", "inout"):
                bindings[p.name] = sl.ex.lvalue(a)
            else:
                t = self.ctx.scope.resolve(p.type)
                v = sl._in_argument(a, t)
                if isinstance(v, ExprValue) and v.json.get("type") not in ("hexstr", "bool") and t.is_scalar():
                    tmp = self.ctx.storage.variable(f"{inst.name}.{p.name}", t, call)
                    pre.append({"op": "set", "parameters": [tmp.json(), to_data(v.json, v.type)
                                                            if isinstance(v.type, Bool) else v.json]})
                    v = tmp
                bindings[p.name] = v
        prefix = inst.name.rsplit(".", 1)[-1]
        states = {st.name: self._fresh_state(f"{prefix}_{st.name}") for st in inst.decl.states}
        sub = self._frame(inst.decl, self.ctx.global_env.child(bindings), ControlContext(inst.name, inst.decl),
                          states, cont)
        return pre, sub

    def _ops(self, prims: list[dict]) -> list[dict]:
        out = []
        for p in prims:
            op = PARSER_OPS.get(p["op"])
            if op is not None:
                out.append({"op": op, "parameters": p["parameters"]})
            elif p["op"] == "__emit":
                raise fail(self.decl, "emit() in a parser")
            else:
                out.append({"op": "primitive", "parameters": [p]})
        return out

    def _state(self, frame: _ParserFrame, env: Env, name: str, statements: tuple, tr: Any, node: Any,
               pre_items: list | None = None, pre_ops: list[dict] | None = None,
               next_state: str | None = None) -> dict:
        """One BMv2 parse state; with ``next_state`` it ends in that state instead of ``tr``."""
        sl = StatementLowering(self.ctx, env, frame.control, in_parser=True, block_kind="parser")
        items = (pre_items or []) + sl.block(statements)
        ops = self._ops(predicate(self.ctx, items, node)) + (pre_ops or [])
        out = {"name": name, "id": 0, "parser_ops": ops, "transition_key": [], "transitions": []}
        if next_state is not None:
            out["transitions"] = [self._default(next_state)]
            return out
        if tr is None:
            raise fail(node, f"state '{node.name}' has no transition")
        if isinstance(tr, ast.PathExpression):
            out["transitions"] = [self._default(self._target(frame, tr.name, tr))]
            return out
        if not isinstance(tr, ast.SelectExpression):
            raise fail(tr, "transition must name a state or be a select")
        widths = []
        hoister = CallHoister(sl)
        keys = tr.keys
        if hoister.has_call(keys):  # calls in select keys run at the end of the state, in order
            keys = hoister.value(ast.ListExpression(loc=tr.loc, elements=tuple(keys))).elements
            ops += self._ops(predicate(self.ctx, hoister.items, node))
        checks_at = len(ops)
        for k in keys:
            j, t = sl.ex.lower(k)
            if isinstance(t, Bool):
                j, t = to_data(j, t), Bits(1)
                if j.get("type") == "expression" and j["value"].get("op") == "b2d" and \
                        j["value"]["right"].get("type") == "expression" and \
                        j["value"]["right"]["value"].get("op") == "d2b":
                    j = j["value"]["right"]["value"]["right"]
            if j.get("type") not in ("field", "lookahead", "stack_field"):
                tmp = self.ctx.out.add_scalar("select_key", t)
                dst = {"type": "field", "value": ["scalars", tmp]}
                ops.append({"op": "set", "parameters": [dst, j]})
                j = dst
            out["transition_key"].append(j)
            widths.append(bit_width(t))
        ops[checks_at:checks_at] = self._ops(sl.ex.take_bounds_checks())
        transitions = []
        for case in tr.cases:
            target = self._target(frame, case.state, case)
            vset = self._value_set_case(sl, case, widths)
            if vset is not None:
                transitions.append({"type": "parse_vset", "value": vset, "mask": None, "next_state": target})
                continue
            comps = self._components(case.keyset, len(widths), case)
            alternatives = [self._alternatives(sl, c, w, case) for c, w in zip(comps, widths)]
            if all(a == [(0, 0)] for a in alternatives):
                transitions.append(self._default(target))
                break
            for combo in itertools.product(*alternatives):
                value = mask = 0
                exact = True
                total = 0
                for (v, m), w in zip(combo, widths):
                    pw = (w + 7) // 8 * 8
                    value = (value << pw) | v
                    mask = (mask << pw) | m
                    exact = exact and m == (1 << w) - 1
                    total += pw
                digits = total // 4
                transitions.append({"type": "hexstr", "value": "0x" + format(value, f"0{digits}x"),
                                    "mask": None if exact else "0x" + format(mask, f"0{digits}x"),
                                    "next_state": target})
        else:
            transitions.append(self._default(self._no_match()))
        out["transitions"] = transitions
        return out

    @staticmethod
    def _value_set_case(sl: StatementLowering, case: ast.SelectCase, widths: list[int]) -> str | None:
        """The BMv2 name of the value set a select case names, or None for other keysets."""
        if not isinstance(case.keyset, ast.PathExpression):
            return None
        v = sl.env.lookup(case.keyset.name)
        if not isinstance(v, ValueSetSymbol):
            return None
        if _value_set_widths(v.element) != widths:
            raise fail(case, f"value set '{case.keyset.name}' of {v.element} does not fit the select "
                             f"key of widths {widths}")
        return v.name

    @staticmethod
    def _default(target: str | None) -> dict:
        return {"type": "default", "value": None, "mask": None, "next_state": target}

    def _target(self, frame: _ParserFrame, name: str, node: Any) -> str | None:
        if name == "accept":
            return frame.accept
        if name == "reject":
            return self._error_state("reject", "NoError")
        if name not in frame.states:
            raise fail(node, f"unknown parser state '{name}'")
        return frame.states[name]

    def _no_match(self) -> str:
        return self._error_state("noMatch", "NoMatch")

    def _error_state(self, name: str, error: str) -> str:
        if name not in self.extra_states:
            code = self.ctx.scope.errors.get(error, 0)
            self.extra_states[name] = {
                "name": name, "id": 0,
                "parser_ops": [{"op": "verify", "parameters": [{"type": "bool", "value": False}, hexstr(code)]}],
                "transition_key": [], "transitions": [self._default(None)]}
        return name

    @staticmethod
    def _components(keyset: ast.Expression, n: int, node: Any) -> list[ast.Expression]:
        if isinstance(keyset, (ast.DefaultExpression, ast.DontCareExpression)):
            return [keyset] * n
        if isinstance(keyset, ast.ListExpression):
            if len(keyset.elements) != n:
                raise fail(node, f"keyset has {len(keyset.elements)} values for {n} select keys")
            return list(keyset.elements)
        if n != 1:
            raise fail(node, f"keyset needs {n} values")
        return [keyset]

    def _alternatives(self, sl: StatementLowering, e: ast.Expression, width: int, node: Any) -> list[tuple[int, int]]:
        full = (1 << width) - 1
        lookup = sl.ex._const_lookup
        if isinstance(e, (ast.DefaultExpression, ast.DontCareExpression)):
            return [(0, 0)]
        if isinstance(e, ast.MaskExpression):
            v = int(self._const(sl, e.value)) & full
            m = int(self._const(sl, e.mask)) & full
            return [(v & m, m)]
        if isinstance(e, ast.RangeExpression):
            lo = int(self._const(sl, e.low)) & full
            hi = int(self._const(sl, e.high)) & full
            return range_masks(lo, hi, width)
        del lookup
        return [(int(self._const(sl, e)) & full, full)]

    def _const(self, sl: StatementLowering, e: ast.Expression) -> int:
        if isinstance(e, (ast.PathExpression, ast.MemberExpression)):
            v = sl.ex.value_of(e)
            if isinstance(v, ConstValue):
                return int(v.value)
        v = self.ctx.scope.const_eval(e, sl.ex._const_lookup)
        return int(v)


def _value_set_widths(t: P4Type) -> list[int] | None:
    """Widths of the select key components a value set of element type ``t`` matches."""
    if isinstance(t, (Bits, EnumT)) and bit_width(t) > 0:
        return [bit_width(t)] if not isinstance(t, EnumT) or t.underlying else None
    if isinstance(t, StructT):
        members = [_value_set_widths(ft) for _, ft in t.fields]
    elif isinstance(t, TupleT):
        members = [_value_set_widths(et) for et in t.elements]
    else:
        return None
    if any(m is None or len(m) != 1 for m in members):
        return None
    return [m[0] for m in members]
