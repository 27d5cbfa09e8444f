"""Expressions (BMv2: `build_expression`): node types, operators, and the kind of value each
node gives (BMv2's ExprType), which `==`, `!=` and `?:` need to agree."""
from __future__ import annotations

from typing import Any

from .values import ValueChecks

# BMv2's `build_expression`: the node types an expression may have
EXPRESSION_TYPES = frozenset({"expression", "header", "field", "bool", "hexstr", "local", "register",
                              "header_stack", "stack_field", "header_union", "header_union_stack"})
# BMv2's ExprOpcodesMap
OPERATORS = frozenset({"+", "-", "%", "/", "*", "<<", ">>", "==", "!=", ">", "<", ">=", "<=", "and", "or",
                       "not", "&", "|", "^", "~", "valid", "valid_union", "?", "two_comp_mod", "usat_cast",
                       "sat_cast", "d2b", "b2d", "dereference_stack", "dereference_header_stack",
                       "dereference_union_stack", "last_stack_index", "size_stack", "access_field",
                       "access_union_header"})
# the kind of value an operator gives (BMv2's ExprOpcodesUtils::get_opcode_type); others: data
_RESULT_KIND = {**{op: "bool" for op in ("==", "!=", ">", "<", ">=", "<=", "and", "or", "not", "valid",
                                          "valid_union", "d2b")},
                "dereference_header_stack": "header", "dereference_stack": "header",
                "dereference_union_stack": "header_union"}
# The engine compiles each expression into nested Python brackets, one level per operation, and
# Python's parser stops at 200 levels (198 operations fit in actions, conditionals and parser
# ops alike): operations may nest this deep, with room to spare for the code around them.
# BMv2 itself has no such limit (p4target/README.md, "Limits").
MAX_EXPRESSION_DEPTH = 180


class ExpressionChecks(ValueChecks):
    """Expression nodes wherever BMv2 builds one."""

    _depth = 0     # operations and register reads enclosing the node being checked
    _outermost = ""    # the JSON path of the expression they are part of

    def expression(self, e: Any, path: str) -> str | None:
        """A node BMv2 passes to build_expression: null, or {"type": ..., "value": ...}. Returns
        the kind of value it gives (BMv2's ExprType: data, bool, header, ...; None for null)."""
        if e is None:
            return None
        self.obj(e, path)
        if e.get("type") in ("expression", "register"):
            if self._depth == 0:
                self._outermost = path
            elif self._depth >= MAX_EXPRESSION_DEPTH:
                self.fail(self._outermost, f"expression nested more than {MAX_EXPRESSION_DEPTH} "
                                           "operations deep, this switch's limit "
                                           "(p4target/README.md, Limits)")
            self._depth += 1
            try:
                return self._expression(e, path)
            finally:
                self._depth -= 1
        return self._expression(e, path)

    def _expression(self, e: dict, path: str) -> str | None:
        if "type" not in e:
            self.fail(path, 'expression node needs "type"' + (
                ' (a bare {"op", "left", "right"} node must be {"type": "expression", "value": {...}})'
                if "op" in e else ""))
        t = self.string(e["type"], f"{path}.type")
        if t not in EXPRESSION_TYPES:
            self.fail(f"{path}.type", f"invalid type in expression: '{t}'")
        v = self.key(e, "value", path)
        vp = f"{path}.value"
        if t == "expression":
            return self.operation(v, vp)
        if t in ("header", "header_union", "header_stack", "header_union_stack"):
            table = {"header": self.headers, "header_union": self.unions, "header_stack": self.stacks,
                     "header_union_stack": self.union_stacks}[t]
            self.ref(table, t.replace("_", " "), v, vp)
            return t
        if t == "field":
            self.field(v, vp)
        elif t == "bool":
            self.boolean(v, vp)
            return "bool"
        elif t == "hexstr":
            self.hexstr(v, vp)
        elif t in ("local", "runtime_data"):
            self.integer(v, vp, 0)
        elif t == "stack_field":
            self.stack_field(v, vp)
        elif t == "register":
            self.arr(v, vp, 2)
            self.ref(self.registers, "register array", v[0], f"{vp}[0]")
            self.expression(v[1], f"{vp}[1]")
        return "data"

    def operation(self, v: Any, path: str) -> str | None:
        """The value of an "expression" node: an operation; returns the kind of its result."""
        self.obj(v, path)
        if "type" in v and "op" not in v:  # BMv2 reads this node's "op": a typed node has none
            self.fail(path, 'an operation needs "op" (this is a typed node inside an expression node)')
        op = self.string(self.key(v, "op", path), f"{path}.op")
        if op not in OPERATORS:
            self.fail(f"{path}.op", f"unknown operator '{op}'")
        if "left" not in v or "right" not in v:
            self.fail(path, 'an operation needs "left" and "right" (null when unused)')
        if op in ("access_field", "access_union_header"):
            want = "header" if op == "access_field" else "header_union"
            if self.expression(v["left"], f"{path}.left") != want:
                self.fail(f"{path}.left", f"'{op}' needs a {want.replace('_', ' ')} on its left")
            self.integer(v["right"], f"{path}.right", 0)
            return "data" if op == "access_field" else "header"
        cond = self.expression(self.key(v, "cond", path), f"{path}.cond") if op == "?" else None
        left = self.expression(v["left"], f"{path}.left")
        if v["right"] is None:
            self.fail(f"{path}.right", f"operator '{op}' needs a right operand")
        right = self.expression(v["right"], f"{path}.right")
        if op in ("==", "!=", "?") and (left != right or left is None):
            self.fail(path, f"operator '{op}' needs operands of one kind, got {left or 'nothing'} and {right}")
        if op == "?" and cond != "bool":
            self.fail(f"{path}.cond", f"the condition of '?' must be boolean, got {cond or 'nothing'}")
        return _RESULT_KIND.get(op, left if op == "?" else "data")

    def typed_value(self, p: dict, path: str) -> None:
        """The value of a {"type": "expression"} parameter or source: itself a typed node."""
        self.expression(self.key(p, "value", path), f"{path}.value")
