"""Parsers and deparsers (BMv2: `init_parsers`, `init_deparsers`): parse states, parser ops,
select keys and transition widths, deparser order."""
from __future__ import annotations

from typing import Any

from .values import _MAX_WIDTH, ValueChecks, _nbytes

PARSER_OPS = {"extract": 1, "extract_VL": 2, "set": 2, "verify": 2, "primitive": 1, "shift": 1, "advance": 1}
TRANSITION_KEY_TYPES = frozenset({"field", "stack_field", "union_stack_field", "lookahead"})
TRANSITION_TYPES = frozenset({"hexstr", "default", "parse_vset"})


class ParserChecks(ValueChecks):
    """Parsers, parse states and deparsers."""

    def parsers(self) -> None:
        parsers = self.named("parsers")
        if not parsers:
            self.fail("parsers", "a program needs a parser")
        for n, parser in parsers.items():
            p = self.path_of("parsers", n)
            states: dict[str, dict] = {}
            ids: set[int] = set()
            for i, st in enumerate(self.arr(self.key(parser, "parse_states", p), f"{p}.parse_states")):
                sp = f"{p}.parse_states[{i}]"
                self.obj(st, sp)
                sname = self.string(self.key(st, "name", sp), f"{sp}.name")
                sid = self.integer(self.key(st, "id", sp), f"{sp}.id")
                if sname in states or sid in ids:
                    self.fail(sp, f"duplicate parse state name or id ('{sname}', {sid})")
                states[sname] = st
                ids.add(sid)
            for i, st in enumerate(parser["parse_states"]):
                self.parse_state(st, f"{p}.parse_states[{i}]", states)
            init = self.key(parser, "init_state", p)
            if self.string(init, f"{p}.init_state") not in states:
                self.fail(f"{p}.init_state", f"unknown parse state '{init}'")

    def parse_state(self, st: dict, sp: str, states: dict) -> None:
        for k, op in enumerate(self.arr(st.get("parser_ops", []), f"{sp}.parser_ops")):
            self.parser_op(op, f"{sp}.parser_ops[{k}]")
        widths: list[int] = []
        for k, key in enumerate(self.arr(st.get("transition_key", []), f"{sp}.transition_key")):
            widths.append(self.transition_key(key, f"{sp}.transition_key[{k}]"))
        size = sum((w + 7) // 8 for w in widths)
        for k, tr in enumerate(self.arr(st.get("transitions", []), f"{sp}.transitions")):
            tp = f"{sp}.transitions[{k}]"
            self.obj(tr, tp)
            t = tr.get("type", "hexstr")
            if t == "hexstr" and tr.get("value") == "default":
                t = "default"
            if self.string(t, f"{tp}.type") not in TRANSITION_TYPES:
                self.fail(f"{tp}.type", f"unknown transition type '{t}'")
            nxt = self.key(tr, "next_state", tp)
            if nxt is not None and self.string(nxt, f"{tp}.next_state") not in states:
                self.fail(f"{tp}.next_state", f"unknown parse state '{nxt}'")
            mask = tr.get("mask")
            if t == "hexstr":
                value = self.hexstr(self.key(tr, "value", tp), f"{tp}.value")
                if _nbytes(value) != size:
                    self.fail(f"{tp}.value", f"transition value has {_nbytes(value)} byte(s), the key {size}")
                if mask is not None and _nbytes(self.hexstr(mask, f"{tp}.mask")) != size:
                    self.fail(f"{tp}.mask", f"transition mask has {_nbytes(mask)} byte(s), the key {size}")
            elif t == "parse_vset":
                vs = self.ref(self.vsets, "parser value set", self.key(tr, "value", tp), f"{tp}.value")
                want = (self.vsets[vs]["compressed_bitwidth"] + 7) // 8
                if mask is not None and _nbytes(self.hexstr(mask, f"{tp}.mask")) != want:
                    self.fail(f"{tp}.mask", f"value set mask has {_nbytes(mask)} byte(s), the set {want}")

    def transition_key(self, key: Any, kp: str) -> int:
        self.obj(key, kp)
        t = self.string(self.key(key, "type", kp), f"{kp}.type")
        if t not in TRANSITION_KEY_TYPES:
            self.fail(f"{kp}.type", f"invalid entry in parse state key: '{t}'")
        v = self.key(key, "value", kp)
        if t == "field":
            self.field(v, f"{kp}.value")
            if v[1] == "$valid$":
                return 1
            width = self.type_fields[self.headers[v[0]]["header_type"]][v[1]]
            if width == "*":
                self.fail(f"{kp}.value", "a variable-length field cannot be a select key")
            return width
        if t == "stack_field":
            self.stack_field(v, f"{kp}.value")
            return self.type_fields[self.stacks[v[0]]["header_type"]][v[1]]
        if t == "lookahead":
            self.arr(v, f"{kp}.value", 2)
            self.integer(v[0], f"{kp}.value[0]", 0, _MAX_WIDTH)
            return self.integer(v[1], f"{kp}.value[1]", 1, _MAX_WIDTH)
        self.arr(v, f"{kp}.value", 3)  # union_stack_field: [union stack, member, field]
        us = self.ref(self.union_stacks, "header union stack", v[0], f"{kp}.value[0]")
        members = dict(self.union_types[self.union_stacks[us]["union_type"]]["headers"])
        if self.string(v[1], f"{kp}.value[1]") not in members:
            self.fail(f"{kp}.value[1]", f"unknown member '{v[1]}' of header union stack '{us}'")
        width = self.type_fields[members[v[1]]].get(self.string(v[2], f"{kp}.value[2]"))
        if type(width) is not int:
            self.fail(f"{kp}.value[2]", f"unknown field '{v[2]}' of '{v[1]}'")
        return width

    def parser_op(self, op: Any, path: str) -> None:
        self.obj(op, path)
        kind = self.string(self.key(op, "op", path), f"{path}.op")
        if kind not in PARSER_OPS:
            self.fail(f"{path}.op", f"parser op '{kind}' not supported")
        params = self.arr(self.key(op, "parameters", path), f"{path}.parameters", PARSER_OPS[kind])
        pp = f"{path}.parameters"
        if kind in ("extract", "extract_VL"):
            target = self.obj(params[0], f"{pp}[0]")
            t = self.string(self.key(target, "type", f"{pp}[0]"), f"{pp}[0].type")
            v = self.key(target, "value", f"{pp}[0]")
            if t == "regular":
                self.header(v, f"{pp}[0].value")
            elif t == "stack":
                self.ref(self.stacks, "header stack", v, f"{pp}[0].value")
            elif t == "union_stack":
                self.arr(v, f"{pp}[0].value", 2)
                self.ref(self.union_stacks, "header union stack", v[0], f"{pp}[0].value[0]")
                self.string(v[1], f"{pp}[0].value[1]")
            else:
                self.fail(f"{pp}[0].type", f"extract type '{t}' not supported")
            if kind == "extract_VL":
                size = self.obj(params[1], f"{pp}[1]")
                if size.get("type") != "expression":
                    self.fail(f"{pp}[1].type", "the length of extract_VL must be of type 'expression'")
                self.typed_value(size, f"{pp}[1]")
        elif kind == "set":
            dst = self.obj(params[0], f"{pp}[0]")
            if dst.get("type") != "field":
                self.fail(f"{pp}[0].type", "the destination of 'set' must be a field")
            self.field(self.key(dst, "value", f"{pp}[0]"), f"{pp}[0].value", valid_ok=False)
            src = self.obj(params[1], f"{pp}[1]")
            t = self.string(self.key(src, "type", f"{pp}[1]"), f"{pp}[1].type")
            if t == "expression":
                self.typed_value(src, f"{pp}[1]")
            elif t == "lookahead":
                self.arr(self.key(src, "value", f"{pp}[1]"), f"{pp}[1].value", 2)
                self.integer(src["value"][0], f"{pp}[1].value[0]", 0, _MAX_WIDTH)
                self.integer(src["value"][1], f"{pp}[1].value[1]", 1, _MAX_WIDTH)
            elif t in ("field", "hexstr"):
                self.expression(src, f"{pp}[1]")
            else:
                self.fail(f"{pp}[1].type", f"'set' has unsupported source type '{t}'")
        elif kind == "verify":
            self.expression(params[0], f"{pp}[0]")
            if type(params[1]) is int:
                if params[1] not in self.errors.values():
                    self.fail(f"{pp}[1]", f"invalid error code {params[1]}")
            else:
                self.expression(params[1], f"{pp}[1]")
        elif kind == "primitive":
            self.primitive(params[0], f"{pp}[0]")
        elif kind == "shift":
            self.integer(params[0], f"{pp}[0]", 0)
        elif kind == "advance":
            adv = self.obj(params[0], f"{pp}[0]")
            t = self.string(self.key(adv, "type", f"{pp}[0]"), f"{pp}[0].type")
            if t == "expression":
                self.typed_value(adv, f"{pp}[0]")
            elif t in ("field", "hexstr"):
                self.expression(adv, f"{pp}[0]")
            else:
                self.fail(f"{pp}[0].type", f"'advance' has unsupported parameter type '{t}'")

    def deparsers(self) -> None:
        deparsers = self.named("deparsers")
        if not deparsers:
            self.fail("deparsers", "a program needs a deparser (simple_switch cannot send a packet without one)")
        for n, d in deparsers.items():
            p = self.path_of("deparsers", n)
            for i, h in enumerate(self.arr(d.get("order", []), f"{p}.order")):
                self.header(h, f"{p}.order[{i}]")
            for i, prim in enumerate(self.arr(d.get("primitives") or [], f"{p}.primitives")):
                self.primitive(prim, f"{p}.primitives[{i}]")
