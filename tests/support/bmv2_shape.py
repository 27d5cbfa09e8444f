"""The node shapes BMv2's JSON loader accepts, as a checker for compiler output.

Written from behavioral-model's `src/bm_sim/P4Objects.cpp` (1.15.5) and `docs/JSON_format.md`:
BMv2 reads an *expression node* (`{"type": ..., "value": ...}` with the types below; an
operation is `{"type": "expression", "value": {"op", "left", "right"}}`) in conditionals,
`verify`, checksum conditions, `length_exp`, register indices and operands, and a *parameter*
(a primitive's argument, with its own list of types; an expression argument is
`{"type": "expression", "value": <expression node>}`) in actions, parser `primitive` ops and
deparsers. `problems(document)` lists every place where a node has another shape, each with
its JSON path.
"""
from __future__ import annotations

from typing import Any

EXPRESSION_TYPES = {"expression", "header", "field", "bool", "hexstr", "local", "register",
                    "header_stack", "stack_field", "header_union", "header_union_stack"}
PARAMETER_TYPES = {"hexstr", "parameters_vector", "field_list", "runtime_data", "header", "field",
                   "calculation", "meter_array", "counter_array", "register_array",
                   "header_stack", "expression", "register", "extern", "string", "stack_field",
                   "header_union", "header_union_stack"}
_PAIR_TYPES = {"field", "stack_field"}  # value: [header, field]
BOOLEAN_OPS = {"==", "!=", "<", ">", "<=", ">=", "and", "or", "not", "d2b", "valid", "valid_union"}


class _Checker:
    def __init__(self) -> None:
        self.problems: list[str] = []

    def bad(self, path: str, what: str) -> None:
        self.problems.append(f"{path}: {what}")

    def _typed(self, node: Any, path: str) -> str | None:
        if not isinstance(node, dict):
            self.bad(path, f"expected a typed node, got {type(node).__name__}")
            return None
        if "type" not in node or not isinstance(node["type"], str):
            self.bad(path, f"node without 'type' (keys {sorted(node)})")
            return None
        if "value" not in node:
            self.bad(path, f"'{node['type']}' node without 'value'")
            return None
        return node["type"]

    def _pair(self, value: Any, path: str) -> None:
        if not (isinstance(value, list) and len(value) == 2 and all(isinstance(v, str) for v in value)):
            self.bad(path, f"expected [header, field], got {value!r}")

    # ------------------------------------------------------------------ expressions
    def expression(self, node: Any, path: str) -> None:
        t = self._typed(node, path)
        if t is None:
            return
        value = node["value"]
        if t not in EXPRESSION_TYPES:
            self.bad(path, f"type '{t}' is not an expression type")
        elif t == "expression":
            self._operation(value, path + ".value")
        elif t in _PAIR_TYPES:
            self._pair(value, path + ".value")
        elif t == "hexstr" and not isinstance(value, str):
            self.bad(path, "hexstr value is not a string")
        elif t == "bool" and not isinstance(value, bool):
            self.bad(path, "bool value is not a boolean")
        elif t == "local" and not isinstance(value, int):
            self.bad(path, "local value is not an integer")
        elif t == "register":
            self._register(value, path + ".value")
        elif t in ("header", "header_stack", "header_union", "header_union_stack") and \
                not isinstance(value, str):
            self.bad(path, f"{t} value is not a name")

    def _operation(self, op: Any, path: str) -> None:
        if not isinstance(op, dict) or not isinstance(op.get("op"), str):
            self.bad(path, "expected an operation {op, left, right}")
            return
        if "type" in op:
            self.bad(path, "operation holds a 'type' (an expression node nested one level too deep)")
        for side in ("left", "right"):
            if side not in op:
                self.bad(path, f"operation '{op['op']}' without '{side}'")
        if op["op"] in ("access_field", "access_union_header"):
            self.expression(op.get("left"), path + ".left")
            if not isinstance(op.get("right"), int):
                self.bad(path + ".right", f"'{op['op']}' needs an integer offset")
            return
        for side in ("left", "right"):
            if op.get(side) is not None:
                self.expression(op[side], f"{path}.{side}")
        if op["op"] == "?":
            self.expression(op.get("cond"), path + ".cond")

    def _register(self, value: Any, path: str) -> None:
        if not (isinstance(value, list) and len(value) == 2 and isinstance(value[0], str)):
            self.bad(path, "expected [register_array, index expression]")
            return
        self.expression(value[1], path + "[1]")

    # ------------------------------------------------------------------ parameters
    def parameter(self, node: Any, path: str) -> None:
        t = self._typed(node, path)
        if t is None:
            return
        value = node["value"]
        if t not in PARAMETER_TYPES:
            self.bad(path, f"type '{t}' is not a primitive parameter type")
        elif t == "expression":
            self.expression(value, path + ".value")
            if isinstance(value, dict) and (value.get("type") == "bool" or (
                    value.get("type") == "expression" and isinstance(value.get("value"), dict)
                    and value["value"].get("op") in BOOLEAN_OPS)):
                self.bad(path, "a boolean expression as an argument (BMv2 asserts: use b2d)")
        elif t in _PAIR_TYPES:
            self._pair(value, path + ".value")
        elif t == "parameters_vector":
            for i, v in enumerate(value):
                self.parameter(v, f"{path}.value[{i}]")
        elif t == "field_list":
            for i, v in enumerate(value):
                if self._typed(v, f"{path}.value[{i}]") not in ("field", None):
                    self.bad(f"{path}.value[{i}]", "field_list entries must be fields")
        elif t == "register":
            self._register(value, path + ".value")
        elif t == "runtime_data" and not isinstance(value, int):
            self.bad(path, "runtime_data value is not an integer")
        elif t == "hexstr" and not isinstance(value, str):
            self.bad(path, "hexstr value is not a string")

    def primitive(self, prim: Any, path: str) -> None:
        if not isinstance(prim, dict) or not isinstance(prim.get("op"), str):
            self.bad(path, "primitive without 'op'")
            return
        params = prim.get("parameters")
        if not isinstance(params, list):
            self.bad(path, "primitive without a 'parameters' list")
            return
        for i, p in enumerate(params):
            self.parameter(p, f"{path}.parameters[{i}]")

    # ------------------------------------------------------------------ sections
    def parser_op(self, op: dict, path: str) -> None:
        kind = op.get("op")
        params = op.get("parameters", [])
        if kind in ("extract", "extract_VL"):
            want = 1 if kind == "extract" else 2
            if len(params) != want:
                self.bad(path, f"{kind} needs {want} parameters")
                return
            if self._typed(params[0], path + ".parameters[0]") not in ("regular", "stack", "union_stack", None):
                self.bad(path + ".parameters[0]", "extract type must be regular, stack or union_stack")
            if kind == "extract_VL":
                if self._typed(params[1], path + ".parameters[1]") != "expression":
                    self.bad(path + ".parameters[1]", "extract_VL length must be an 'expression'")
                else:
                    self.expression(params[1]["value"], path + ".parameters[1].value")
        elif kind == "set":
            if len(params) != 2:
                self.bad(path, "set needs 2 parameters")
                return
            if self._typed(params[0], path + ".parameters[0]") != "field":
                self.bad(path + ".parameters[0]", "set destination must be a field")
            src = self._typed(params[1], path + ".parameters[1]")
            if src == "expression":
                self.expression(params[1]["value"], path + ".parameters[1].value")
            elif src == "field":
                self._pair(params[1]["value"], path + ".parameters[1].value")
            elif src not in ("hexstr", "lookahead", None):
                self.bad(path + ".parameters[1]", f"set source of type '{src}'")
        elif kind == "verify":
            if len(params) != 2:
                self.bad(path, "verify needs 2 parameters")
                return
            self.expression(params[0], path + ".parameters[0]")
            if not isinstance(params[1], int):
                self.expression(params[1], path + ".parameters[1]")
        elif kind == "primitive":
            if len(params) != 1:
                self.bad(path, "primitive op needs 1 parameter")
                return
            self.primitive(params[0], path + ".parameters[0]")
        elif kind == "shift":
            if len(params) != 1 or not isinstance(params[0], int):
                self.bad(path, "shift needs one integer")
        elif kind == "advance":
            if len(params) != 1:
                self.bad(path, "advance needs 1 parameter")
                return
            t = self._typed(params[0], path + ".parameters[0]")
            if t == "expression":
                self.expression(params[0]["value"], path + ".parameters[0].value")
            elif t not in ("field", "hexstr", None):
                self.bad(path + ".parameters[0]", f"advance by '{t}'")
        else:
            self.bad(path, f"unknown parser op '{kind}'")

    def document(self, doc: dict) -> None:
        for i, ht in enumerate(doc.get("header_types", [])):
            if "length_exp" in ht:
                self.expression(ht["length_exp"], f"header_types[{i}].length_exp")
        for i, parser in enumerate(doc.get("parsers", [])):
            for j, state in enumerate(parser.get("parse_states", [])):
                base = f"parsers[{i}].parse_states[{j}]"
                for k, op in enumerate(state.get("parser_ops", [])):
                    self.parser_op(op, f"{base}.parser_ops[{k}]")
                for k, key in enumerate(state.get("transition_key", [])):
                    t = self._typed(key, f"{base}.transition_key[{k}]")
                    if t not in ("field", "stack_field", "union_stack_field", "lookahead", None):
                        self.bad(f"{base}.transition_key[{k}]", f"transition key of type '{t}'")
        for i, dep in enumerate(doc.get("deparsers", [])):
            for j, prim in enumerate(dep.get("primitives", [])):
                self.primitive(prim, f"deparsers[{i}].primitives[{j}]")
        for i, action in enumerate(doc.get("actions", [])):
            for j, prim in enumerate(action.get("primitives", [])):
                self.primitive(prim, f"actions[{i}].primitives[{j}]")
        for i, calc in enumerate(doc.get("calculations", [])):
            for j, inp in enumerate(calc.get("input", [])):
                t = self._typed(inp, f"calculations[{i}].input[{j}]")
                if t not in ("field", "hexstr", "header", "payload", None):
                    self.bad(f"calculations[{i}].input[{j}]", f"calculation input of type '{t}'")
        for i, ck in enumerate(doc.get("checksums", [])):
            if ck.get("if_cond") is not None:
                self.expression(ck["if_cond"], f"checksums[{i}].if_cond")
        for i, fl in enumerate(doc.get("field_lists", [])):
            for j, el in enumerate(fl.get("elements", [])):
                if self._typed(el, f"field_lists[{i}].elements[{j}]") not in ("field", "hexstr", None):
                    self.bad(f"field_lists[{i}].elements[{j}]", "field list entries are fields or hexstr")
        for i, ll in enumerate(doc.get("learn_lists", [])):
            for j, el in enumerate(ll.get("elements", [])):
                if self._typed(el, f"learn_lists[{i}].elements[{j}]") not in ("field", None):
                    self.bad(f"learn_lists[{i}].elements[{j}]", "learn list entries must be fields")
        for i, ext in enumerate(doc.get("extern_instances", [])):
            for j, attr in enumerate(ext.get("attribute_values", [])):
                path = f"extern_instances[{i}].attribute_values[{j}]"
                t = self._typed(attr, path)
                if t == "expression":
                    self.expression(attr["value"], path + ".value")
                elif t not in ("hexstr", "string", None):
                    self.bad(path, f"extern attribute of type '{t}'")
        for i, pipe in enumerate(doc.get("pipelines", [])):
            for j, cond in enumerate(pipe.get("conditionals", [])):
                self.expression(cond.get("expression"), f"pipelines[{i}].conditionals[{j}].expression")
            for j, prof in enumerate(pipe.get("action_profiles", [])):
                for k, el in enumerate((prof.get("selector") or {}).get("input", [])):
                    path = f"pipelines[{i}].action_profiles[{j}].selector.input[{k}]"
                    if self._typed(el, path) not in ("field", None):
                        self.bad(path, "selector inputs must be fields")
            for j, table in enumerate(pipe.get("tables", [])):
                for k, key in enumerate(table.get("key", [])):
                    path = f"pipelines[{i}].tables[{j}].key[{k}].target"
                    if key.get("match_type") == "valid":
                        if not isinstance(key.get("target"), str):
                            self.bad(path, "a valid match names a header")
                    else:
                        self._pair(key.get("target"), path)


def problems(document: dict) -> list[str]:
    """Every node of `document` in a shape BMv2's loader refuses, as 'json.path: what'."""
    checker = _Checker()
    checker.document(document)
    return checker.problems
