"""Expressions (BMv2: `Expression`, `ArithExpression`): JSON expression nodes to Python source
over the PHV, and assignment targets."""
from __future__ import annotations

from typing import Any

from ..errors import ProgramLoadError
from .codegen import Namespace, int_literal, str_literal
from .layout import Layout

# binary operators that are the same in Python
_SAME_BINARY = frozenset({"+", "*", "<<", ">>", "&", "|", "^", "==", "!=", "<", ">", "<=", ">="})


class Expressions:
    """Source of the expressions and assignments of one program."""

    def __init__(self, layout: Layout, ns: Namespace) -> None:
        self.layout = layout
        self.ns = ns

    def ex(self, e: Any) -> str:
        """Source of an expression node (`{"type": ..., "value": ...}`)."""
        if e is None:
            return "0"
        lay = self.layout
        t = e.get("type")
        v = e.get("value")
        if t == "field":
            if v[1] == "$valid$":
                return f"V[{lay.hid(v[0])}]"
            return f"F[{lay.fidx(v)}]"
        if t == "hexstr":
            return str(int(v, 16))
        if t == "bool":
            return "1" if v else "0"
        if t in ("header", "header_union"):
            if v in lay.unions:
                return self.ns.const("union", lay.unions[v])
            return str(lay.hid(v))
        if t == "header_stack":
            return str(lay.stack_id[v])
        if t in ("local", "runtime_data"):
            return f"D[{int_literal(v, t + ' index')}]"
        if t == "expression":
            return self.ex_op(v)
        if t == "stack_field":
            sid = lay.stack_id[v[0]]
            hdr_ids = lay.stacks[v[0]]
            off = [n for n, _, _ in lay.header_fields[lay.header_name(hdr_ids[0])]].index(v[1])
            return f"F[HB[STK[{sid}][NX[{sid}] - 1]] + {off}]"
        if t == "union_stack_field":  # [union stack, member, field]: of the last extracted element
            usid, elems, members = lay.union_stacks[v[0]]
            m = members.index(v[1])
            off = [n for n, _, _ in lay.header_fields[lay.header_name(elems[0][m])]].index(v[2])
            return f"F[HB[{self.ns.const('ustk', elems)}[NX[{usid}] - 1][{m}]] + {off}]"
        if t == "lookahead":
            off, width = v
            return f"_look(P, {int_literal(off, 'lookahead offset')}, {int_literal(width, 'lookahead width')})"
        if t == "string":
            return str_literal(v, "string expression")
        raise ProgramLoadError(f"unsupported expression type '{t}'")

    def ex_op(self, e: dict) -> str:
        """Source of an operation node (`{"op", "left", "right"}`)."""
        if "op" not in e:
            return self.ex(e)
        op = e["op"]
        L = self.ex(e["left"]) if e.get("left") is not None else None
        R = self._operand(e.get("right"))
        if op in _SAME_BINARY:
            return f"({L} {op} {R})"
        if op == "-":
            return f"(-{R})" if L is None else f"({L} - {R})"
        if op == "/":
            return f"({L} // {R})"
        if op == "%":
            return f"({L} % {R})"
        if op == "and":
            return f"({L} and {R})"
        if op == "or":
            return f"({L} or {R})"
        if op == "not":
            return f"(not {R})"
        if op == "~":
            return f"(~{R})"
        if op == "valid":
            if e["right"].get("type") == "header_union" or e["right"].get("value") in self.layout.unions:
                return f"any(V[_h] for _h in {R})"
            return f"V[{R}]"
        if op == "valid_union":
            return f"any(V[_h] for _h in {R})"
        if op == "d2b":
            return f"({R} != 0)"
        if op == "b2d":
            return f"(1 if {R} else 0)"
        if op == "?":
            return f"({L} if {self.ex(e['cond'])} else {R})"
        if op == "two_comp_mod":
            return f"_tcm({L}, {R})"
        if op == "usat_cast":
            return f"_sat({L}, {R}, False)"
        if op == "sat_cast":
            return f"_sat({L}, {R}, True)"
        if op in ("dereference_header_stack", "dereference_stack"):  # the second: BMv2's older name
            return f"STK[{L}][{R}]"
        if op == "last_stack_index":
            return f"(NX[{R}] - 1)"
        if op == "size_stack":  # BMv2's count of a stack's elements in use (nextIndex)
            return f"NX[{R}]"
        if op == "access_field":
            return f"F[HB[{L}] + {R}]"
        if op == "dereference_union":
            return f"{L}[{R}]"
        if op == "max":
            return f"max({L}, {R})"
        if op == "min":
            return f"min({L}, {R})"
        raise ProgramLoadError(f"unsupported expression operator '{op}'")

    def _operand(self, node: Any) -> str | None:
        """A right operand; a plain integer is BMv2's field offset of `access_field`."""
        if node is None:
            return None
        if type(node) is int:
            return int_literal(node, "field offset")
        return self.ex(node)

    def header_ref(self, p: dict) -> str:
        """Source of a header id: a named header, or an expression (stack element)."""
        if p.get("type") == "header":
            return str(self.layout.hid(p["value"]))
        return self.ex(p)

    # -- assignment -----------------------------------------------------------------------
    def lvalue(self, e: dict) -> tuple[str, int, bool]:
        """Target slot source, width and signedness of an assignable expression."""
        lay = self.layout
        t = e.get("type")
        if t == "expression" and isinstance(e.get("value"), dict) and "type" in e["value"]:
            return self.lvalue(e["value"])  # a parameter holding an expression node (p4c's shape)
        if t == "field":
            i = lay.fidx(e["value"])
            return f"F[{i}]", lay.field_width[i], lay.field_signed[i]
        if t == "expression" and e["value"].get("op") == "access_field":
            ve = e["value"]
            hdr = self.ex(ve["left"])
            off = int(self._operand(ve["right"]))
            # width: all stack elements share one type; use the first element's field
            width, signed = self._stack_field_width(ve["left"], off)
            return f"F[HB[{hdr}] + {off}]", width, signed
        raise ProgramLoadError(f"unsupported assignment target {e!r:.80}")

    def _stack_field_width(self, hexpr: dict, off: int) -> tuple[int, bool]:
        v = hexpr.get("value", {})
        if isinstance(v, dict) and v.get("op") in ("dereference_header_stack", "dereference_stack"):
            stack = v["left"]["value"]
            first = self.layout.header_name(self.layout.stacks[stack][0])
            _, w, s = self.layout.header_fields[first][off]
            return w, s
        raise ProgramLoadError("unsupported dynamic field access")

    def assign(self, dst: dict, src: str) -> str:
        """Source storing `src` into `dst`, cut to the target's width (two's complement if signed)."""
        target, width, signed = self.lvalue(dst)
        if signed:
            return f"{target} = _tcm({src}, {width})"
        return f"{target} = ({src}) & {(1 << width) - 1}"

    def assign_varbit(self, dst: dict, src: dict) -> list[str]:
        """BMv2's `assign_VL`: a varbit field's value and its per-packet size."""
        if dst.get("type") != "field" or src.get("type") != "field":
            raise ProgramLoadError("assign_VL needs two fields")
        d, s = self.layout.fidx(dst["value"]), self.layout.fidx(src["value"])
        return [f"F[{d}] = F[{s}]", f"_copy_vl(P, {d}, {s}, 1)"]
