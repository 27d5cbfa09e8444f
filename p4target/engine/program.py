"""Load a BMv2 JSON program and compile it, once, into Python closures.

Every field of every header instance gets a slot in one flat list `F` (the PHV); header
validity bits live in `V`, header-stack next indices in `NX`; the current length in bits of
each extracted varbit field lives in the per-packet dict `VL` (slot -> bits). Expressions and action
bodies are turned into Python source over those lists and compiled with `compile()`, so
the per-packet path never looks at the JSON again.
"""
from __future__ import annotations

import random as _random
from dataclasses import dataclass, field
from typing import Any, Callable

from . import hashes
from .codegen import Namespace, int_literal, str_literal
from .errors import ProgramLoadError
from .externs import CounterArray, MeterArray, ParseValueSet, RegisterArray
from .tables import ActionProfile, ActionSpec, KeyField, Table

# standard_metadata.instance_type values used by BMv2's simple_switch
NORMAL, INGRESS_CLONE, EGRESS_CLONE, COALESCED, RECIRC, REPLICATION, RESUBMIT = 0, 1, 2, 3, 4, 5, 6
DROP_PORT = 511


class ParserException(Exception):
    """Raised inside the parser with the numeric P4 error value."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


class ExitControl(Exception):
    """`exit` statement: leaves the current control."""


class AssertFailure(Exception):
    """An `assert`/`assume` failed: BMv2 stops processing the packet."""


class PacketState:
    """Per-packet state: the PHV plus the bookkeeping of v1model's primitives."""
    __slots__ = ("F", "V", "NX", "VL", "data", "off", "length", "length_reg", "clone", "resubmit", "recirc",
                 "digests", "truncate", "now_us", "orig", "logs", "passes")

    def __init__(self, F: list, V: list, NX: list) -> None:
        self.F = F
        self.V = V
        self.NX = NX
        self.VL: dict[int, int] = {}
        self.data = b""
        self.off = 0
        self.length = 0  # bytes received (BMv2's ingress length: counters and meters use it)
        # BMv2's packet-length register: add_header/remove_header adjust it and egress
        # reads standard_metadata.packet_length from it
        self.length_reg = 0
        self.clone = None
        self.resubmit = None
        self.recirc = None
        self.digests = None
        self.truncate = 0
        self.now_us = 0
        self.orig = b""
        self.logs = None
        self.passes = 0  # resubmit/recirculation count, bounded to stop endless loops

    def copy(self) -> "PacketState":
        p = PacketState(self.F[:], self.V[:], self.NX[:])
        p.VL = dict(self.VL)
        p.data, p.off, p.length, p.orig, p.now_us = self.data, self.off, self.length, self.orig, self.now_us
        p.length_reg = self.length_reg
        p.truncate = self.truncate
        p.passes = self.passes
        return p


def _tcm(value: int, width: int) -> int:
    value &= (1 << width) - 1
    return value - (1 << width) if value >> (width - 1) else value


def _sat(value: int, width: int, signed: bool) -> int:
    if signed:
        lo, hi = -(1 << (width - 1)), (1 << (width - 1)) - 1
    else:
        lo, hi = 0, (1 << width) - 1
    return lo if value < lo else hi if value > hi else value


@dataclass
class Program:
    """A loaded program: layout, compiled stages and the runtime objects they use."""
    json: dict
    field_index: dict[tuple[str, str], int]
    field_width: dict[int, int]
    header_index: dict[str, int]
    header_fields: dict[str, list[tuple[str, int, bool]]]
    metadata_headers: set[int]
    stacks: dict[str, list[int]]
    errors: dict[str, int]
    F0: list
    V0: list
    NX0: list
    actions: dict[str, ActionSpec]
    actions_by_id: dict[int, ActionSpec]
    tables: dict[str, Table]
    profiles: dict[str, ActionProfile]
    counters: dict[str, CounterArray]
    meters: dict[str, MeterArray]
    registers: dict[str, RegisterArray]
    field_lists: dict[int, list[int]]
    learn_lists: dict[int, tuple[str, list[int]]]
    parser: Callable = None
    verify_checksums: Callable = None
    update_checksums: Callable = None
    ingress: Callable = None
    egress: Callable = None
    deparser: Callable = None
    log: list = field(default_factory=list)
    value_sets: dict[str, ParseValueSet] = field(default_factory=dict)

    def new_state(self) -> PacketState:
        return PacketState(self.F0[:], self.V0[:], self.NX0[:])

    def sm(self, name: str) -> int | None:
        """Slot of a standard/intrinsic/queueing metadata field, or None if the program lacks it."""
        for hdr in ("standard_metadata", "intrinsic_metadata", "queueing_metadata"):
            idx = self.field_index.get((hdr, name))
            if idx is not None:
                return idx
        return None


class _Compiler:
    def __init__(self, j: dict, log: Callable[[str], None]) -> None:
        self.j = j
        self.log = log
        self.ns = Namespace({"_tcm": _tcm, "_sat": _sat, "_rand": _random.randint,
                             "ParserException": ParserException, "ExitControl": ExitControl,
                             "AssertFailure": AssertFailure})

    # -- layout ---------------------------------------------------------------------------
    def layout(self) -> None:
        j = self.j
        types = {t["name"]: t for t in j.get("header_types", [])}
        self.field_index: dict[tuple[str, str], int] = {}
        self.field_width: dict[int, int] = {}
        self.field_signed: dict[int, bool] = {}
        self.header_index: dict[str, int] = {}
        self.header_base: list[int] = []
        self.header_fields: dict[str, list[tuple[str, int, bool]]] = {}
        self.metadata: set[int] = set()
        self.varbit_slots: dict[int, int] = {}  # slot -> largest width in bits
        F0: list[int] = []
        V0: list[int] = []
        for h in j.get("headers", []):
            ht = types.get(h["header_type"])
            if ht is None:
                raise ProgramLoadError(f"header '{h['name']}' has unknown type '{h['header_type']}'")
            hid = len(V0)
            self.header_index[h["name"]] = hid
            self.header_base.append(len(F0))
            fields = []
            for f in ht["fields"]:
                if not isinstance(f, list) or len(f) not in (2, 3) or type(f[0]) is not str or \
                        not (f[1] == "*" or (type(f[1]) is int and f[1] >= 0)):
                    raise ProgramLoadError(f"header type '{ht['name']}': bad field {f!r:.60}")
            fixed = sum(f[1] for f in ht["fields"] if f[1] != "*")
            for f in ht["fields"]:
                name, width = f[0], f[1]
                signed = bool(f[2]) if len(f) > 2 else False
                if width == "*":
                    width = max(0, int(int_literal(ht.get("max_length", 0), "max_length")) * 8 - fixed)
                    self.varbit_slots[len(F0)] = width
                self.field_index[(h["name"], name)] = len(F0)
                self.field_width[len(F0)] = width
                self.field_signed[len(F0)] = signed
                F0.append(0)
                fields.append((name, width, signed))
            self.header_fields[h["name"]] = fields
            meta = bool(h.get("metadata"))
            if meta:
                self.metadata.add(hid)
            V0.append(1 if meta else 0)
        self.stacks: dict[str, list[int]] = {}
        self.stack_id: dict[str, int] = {}
        for s in j.get("header_stacks", []):
            ids = [self.header_index[self._header_name_by_id(i)] for i in s["header_ids"]]
            self.stack_id[s["name"]] = len(self.stacks)
            self.stacks[s["name"]] = ids
        self.unions: dict[str, list[int]] = {}
        for u in j.get("header_unions", []):
            self.unions[u["name"]] = [self.header_index[self._header_name_by_id(i)] for i in u["header_ids"]]
        # stacks of header unions: each element a union's header ids; their next index follows
        # the header stacks' in NX
        union_names = {u["id"]: u["name"] for u in j.get("header_unions", [])}
        union_members = {t["name"]: [m for m, _ in t["headers"]] for t in j.get("header_union_types", [])}
        self.union_stacks: dict[str, tuple[int, list[list[int]], list[str]]] = {}
        for k, us in enumerate(j.get("header_union_stacks", [])):
            elems = [self.unions[union_names[i]] for i in us["header_union_ids"]]
            self.union_stacks[us["name"]] = (len(self.stacks) + k, elems, union_members.get(us["union_type"], []))
        self.F0, self.V0 = F0, V0
        self.NX0 = [0] * (len(self.stacks) + len(self.union_stacks))
        self.errors = {e[0]: int(int_literal(e[1], f"value of error {e[0]!r:.40}")) for e in j.get("errors", [])}
        self.ns["HB"] = self.header_base
        self.ns["STK"] = [ids for ids in self.stacks.values()]
        self.ns["HLEN"] = [len(self.header_fields[h["name"]]) for h in j.get("headers", [])]
        # fixed size in bytes (a varbit field adds its per-packet length, see remove_header)
        self.ns["HBYTES"] = [sum(w for k, (_, w, _) in enumerate(self.header_fields[h["name"]])
                                 if self.header_base[hid] + k not in self.varbit_slots) // 8
                             for hid, h in enumerate(j.get("headers", []))]
        self.ns["_SPANS"] = {hid: (self.header_base[hid], self.ns["HLEN"][hid]) for hid in range(len(V0))}

    def _header_name_by_id(self, hid: int) -> str:
        for h in self.j.get("headers", []):
            if h["id"] == hid:
                return h["name"]
        raise ProgramLoadError(f"unknown header id {hid}")

    def fidx(self, ref: list) -> int:
        key = (ref[0], ref[1])
        if key not in self.field_index:
            raise ProgramLoadError(f"unknown field '{ref[0]}.{ref[1]}'")
        return self.field_index[key]

    def hid(self, name: str) -> int:
        if name not in self.header_index:
            raise ProgramLoadError(f"unknown header '{name}'")
        return self.header_index[name]

    def const(self, name: str, value: Any) -> str:
        return self.ns.const(name, value)

    # -- expressions ----------------------------------------------------------------------
    def ex(self, e: Any) -> str:
        if e is None:
            return "0"
        t = e.get("type")
        v = e.get("value")
        if t == "field":
            if v[1] == "$valid$":
                return f"V[{self.hid(v[0])}]"
            return f"F[{self.fidx(v)}]"
        if t == "hexstr":
            return str(int(v, 16))
        if t == "bool":
            return "1" if v else "0"
        if t in ("header", "header_union"):
            if v in self.unions:
                return self.const("union", self.unions[v])
            return str(self.hid(v))
        if t == "header_stack":
            return str(self.stack_id[v])
        if t in ("local", "runtime_data"):
            return f"D[{int_literal(v, t + ' index')}]"
        if t == "expression":
            return self.ex_op(v)
        if t == "stack_field":
            sid = self.stack_id[v[0]]
            hdr_ids = self.stacks[v[0]]
            off = [n for n, _, _ in self.header_fields[self._header_name_by_hid(hdr_ids[0])]].index(v[1])
            return f"F[HB[STK[{sid}][NX[{sid}] - 1]] + {off}]"
        if t == "lookahead":
            off, width = v
            return f"_look(P, {int_literal(off, 'lookahead offset')}, {int_literal(width, 'lookahead width')})"
        if t == "string":
            return str_literal(v, "string expression")
        raise ProgramLoadError(f"unsupported expression type '{t}'")

    def _header_name_by_hid(self, hid: int) -> str:
        for name, i in self.header_index.items():
            if i == hid:
                return name
        raise ProgramLoadError(f"unknown header index {hid}")

    def ex_op(self, e: dict) -> str:
        if "op" not in e:
            return self.ex(e)
        op = e["op"]
        L = self.ex(e["left"]) if e.get("left") is not None else None
        R = self.ex(e["right"]) if e.get("right") is not None else None
        if op in ("+", "*", "<<", ">>", "&", "|", "^", "==", "!=", "<", ">", "<=", ">="):
            if op == "-" and L is None:
                return f"(-{R})"
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
            if e["right"].get("type") == "header_union" or e["right"].get("value") in self.unions:
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
        if op == "dereference_header_stack":
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

    def lvalue(self, e: dict) -> tuple[str, int, bool]:
        """Target slot source, width and signedness of an assignable expression."""
        t = e.get("type")
        if t == "field":
            i = self.fidx(e["value"])
            return f"F[{i}]", self.field_width[i], self.field_signed[i]
        if t == "expression" and e["value"].get("op") == "access_field":
            ve = e["value"]
            hdr = self.ex(ve["left"])
            off = int(self.ex(ve["right"]))
            # width: all stack elements share one type; use the first element's field
            width, signed = self._stack_field_width(ve["left"], off)
            return f"F[HB[{hdr}] + {off}]", width, signed
        raise ProgramLoadError(f"unsupported assignment target {e!r}")

    def _stack_field_width(self, hexpr: dict, off: int) -> tuple[int, bool]:
        v = hexpr.get("value", {})
        if isinstance(v, dict) and v.get("op") == "dereference_header_stack":
            stack = v["left"]["value"]
            first = self._header_name_by_hid(self.stacks[stack][0])
            _, w, s = self.header_fields[first][off]
            return w, s
        raise ProgramLoadError("unsupported dynamic field access")

    def assign(self, dst: dict, src: str) -> str:
        target, width, signed = self.lvalue(dst)
        if signed:
            return f"{target} = _tcm({src}, {width})"
        return f"{target} = ({src}) & {(1 << width) - 1}"

    def _assign_vl(self, dst: dict, src: dict) -> list[str]:
        if dst.get("type") != "field" or src.get("type") != "field":
            raise ProgramLoadError("assign_VL needs two fields")
        d, s = self.fidx(dst["value"]), self.fidx(src["value"])
        return [f"F[{d}] = F[{s}]", f"_copy_vl(P, {d}, {s}, 1)"]

    def header_ref(self, p: dict) -> str:
        t = p.get("type")
        if t == "header":
            return str(self.hid(p["value"]))
        return self.ex(p)

    # -- primitives -----------------------------------------------------------------------
    def primitive(self, p: dict) -> list[str]:
        op = p["op"]
        a = p.get("parameters", [])
        if op in ("assign", "modify_field"):
            return [self.assign(a[0], self.ex(a[1]))]
        if op == "assign_VL":  # a varbit field: value and per-packet size
            return self._assign_vl(a[0], a[1])
        if op in _LEGACY_ARITH:  # simple_switch's P4_14-era primitives (p4c-bm's JSON)
            if op in ("add_to_field", "subtract_from_field"):
                return [self.assign(a[0], f"({self.ex(a[0])} {_LEGACY_ARITH[op]} {self.ex(a[1])})")]
            return [self.assign(a[0], f"({self.ex(a[1])} {_LEGACY_ARITH[op]} {self.ex(a[2])})")]
        if op == "no_op":
            return []
        if op == "add_header_fast":
            return [f"V[{self.header_ref(a[0])}] = 1"]
        if op in ("assign_header", "copy_header"):
            d, s = self.header_ref(a[0]), self.header_ref(a[1])
            return [f"_d = {d}; _s = {s}; _n = HLEN[_d]",
                    "F[HB[_d]:HB[_d] + _n] = F[HB[_s]:HB[_s] + _n]; V[_d] = V[_s]"] + (
                        ["_copy_vl(P, HB[_d], HB[_s], _n)"] if self.varbit_slots else [])
        if op == "assign_union":
            d, s = self.unions[a[0]["value"]], self.unions[a[1]["value"]]
            lines = []
            for dh, sh in zip(d, s):
                lines.append(f"F[HB[{dh}]:HB[{dh}] + HLEN[{dh}]] = F[HB[{sh}]:HB[{sh}] + HLEN[{sh}]]; V[{dh}] = V[{sh}]")
            return lines
        if op == "assign_header_stack":
            d, s = self.stacks[a[0]["value"]], self.stacks[a[1]["value"]]
            lines = [f"F[HB[{dh}]:HB[{dh}] + HLEN[{dh}]] = F[HB[{sh}]:HB[{sh}] + HLEN[{sh}]]; V[{dh}] = V[{sh}]"
                     for dh, sh in zip(d, s)]
            lines.append(f"NX[{self.stack_id[a[0]['value']]}] = NX[{self.stack_id[a[1]['value']]}]")
            return lines
        if op in ("add_header", "setValid"):
            # like BMv2, making an invalid header valid zeroes its fields and grows the
            # packet-length register by the header's size
            h = self.header_ref(a[0])
            lines = [f"_h = {h}",
                     "if not V[_h]: F[HB[_h]:HB[_h] + HLEN[_h]] = [0] * HLEN[_h]; V[_h] = 1; "
                     "P.length_reg += HBYTES[_h]"]
            if self.varbit_slots:  # a varbit field of a newly valid header is empty
                lines.insert(1, "if not V[_h]: [P.VL.pop(_k, None) for _k in range(HB[_h], HB[_h] + HLEN[_h])]")
            if h.isdigit():  # a member of a header union: the other members become invalid
                for members in self.unions.values():
                    if int(h) in members:
                        lines += [f"V[{o}] = 0" for o in members if o != int(h)]
            return lines
        if op in ("remove_header", "setInvalid"):
            shrink = "HBYTES[_h]"
            if self.varbit_slots:
                shrink += " + sum(P.VL.get(_k, 0) for _k in range(HB[_h], HB[_h] + HLEN[_h])) // 8"
            return [f"_h = {self.header_ref(a[0])}",
                    f"if V[_h]: V[_h] = 0; P.length_reg -= {shrink}"]
        if op in ("mark_to_drop", "drop"):
            return [f"F[{self.sm_idx('egress_spec')}] = {DROP_PORT}"] + (
                [f"F[{self.sm_idx('mcast_grp')}] = 0"] if self.sm_opt("mcast_grp") is not None else [])
        if op == "exit":
            return ["raise ExitControl()"]
        if op in ("clone_ingress_pkt_to_egress", "clone_egress_pkt_to_egress"):
            fl = self.ex(a[1]) if len(a) > 1 else "0"
            return [f"P.clone = ({self.ex(a[0])}, {fl})"]
        if op in ("resubmit", "resubmit_preserving_field_list"):
            return [f"P.resubmit = {self.ex(a[0]) if a else '0'}"]
        if op in ("recirculate", "recirculate_preserving_field_list"):
            return [f"P.recirc = {self.ex(a[0]) if a else '0'}"]
        if op == "modify_field_with_hash_based_offset":
            calc = self.calculation(a[2]["value"])
            return [self.assign(a[0], f"({self.ex(a[1])} + (({calc}(P) % {self.ex(a[3])}) if {self.ex(a[3])} else 0))")]
        if op == "modify_field_rng_uniform":
            return [self.assign(a[0], f"_rand({self.ex(a[1])}, {self.ex(a[2])})")]
        if op == "count":
            c = self.const("ctr", self.counters[a[0]["value"]])
            return [f"{c}.count({self.ex(a[1])}, P.length)"]
        if op == "execute_meter":
            # like BMv2, an index beyond the array updates no meter and leaves the result alone
            mt = self.const("mtr", self.meters[a[0]["value"]])
            return [f"_i = {self.ex(a[1])}",
                    f"if 0 <= _i < {mt}.size: " + self.assign(a[2], f"{mt}.execute(_i, P.length, P.now_us)")]
        if op == "register_read":
            r = self.const("reg", self.registers[a[1]["value"]])
            # like BMv2, an index beyond the array leaves the destination unchanged
            return [f"_i = {self.ex(a[2])}",
                    f"if 0 <= _i < {r}.size: " + self.assign(a[0], f"{r}.values[_i]")]
        if op == "register_write":
            r = self.const("reg", self.registers[a[0]["value"]])
            return [f"_i = {self.ex(a[1])}",
                    f"if 0 <= _i < {r}.size: {r}.values[_i] = ({self.ex(a[2])}) & {r}.mask"]
        if op == "generate_digest":
            return [f"P.digests = (P.digests or []) + [{self.ex(a[1])}]"]
        if op == "log_msg":
            fmt = str_literal(a[0]["value"], "log_msg format")
            vals = ", ".join(self.ex(x) for x in a[1]["value"]) if len(a) > 1 else ""
            return [f"P.logs = (P.logs or []) + [({fmt}, ({vals}{',' if vals else ''}))]"]
        if op in ("assert", "assume"):
            return [f"if not {self.ex(a[0])}: raise AssertFailure({op!r})"]
        if op == "truncate":
            return [f"P.truncate = {self.ex(a[0])}"]
        if op in ("push", "pop"):
            sid = self.stack_id[a[0]["value"]]
            ids = self.stacks[a[0]["value"]]
            return [f"_{op}(P, {sid}, {ids!r}, {self.ex(a[1])}, _SPANS)"]
        raise ProgramLoadError(f"unsupported primitive '{op}'")

    def action_with_jumps(self, prims: list[dict]) -> list[str]:
        """An action body with BMv2's `_jump` / `_jump_if_zero` (conditional code inside actions,
        as p4c emits it): a program counter steps through the primitives."""
        n = len(prims)
        body = ["_pc = 0", f"while _pc < {n}:"]
        for i, p in enumerate(prims):
            op = p["op"]
            a = p.get("parameters", [])
            body.append(f"    {'if' if i == 0 else 'elif'} _pc == {i}:")
            if op in ("_jump", "_jump_if_zero"):
                target = a[0] if op == "_jump" else a[1]
                if target.get("type") != "hexstr" or not 0 <= int(target["value"], 16) <= n:
                    raise ProgramLoadError(f"'{op}' at primitive {i} jumps outside its action")
            if op == "_jump":
                body.append(f"        _pc = {self.ex(a[0])}")
            elif op == "_jump_if_zero":
                body.append(f"        _pc = {self.ex(a[1])} if not ({self.ex(a[0])}) else {i + 1}")
            else:
                body += ["        " + line for line in self.primitive(p)]
                body.append(f"        _pc = {i + 1}")
        body += ["    else:", "        break"]
        return body

    def sm_opt(self, name: str) -> int | None:
        for hdr in ("standard_metadata", "intrinsic_metadata", "queueing_metadata"):
            if (hdr, name) in self.field_index:
                return self.field_index[(hdr, name)]
        return None

    def sm_idx(self, name: str) -> int:
        i = self.sm_opt(name)
        if i is None:
            raise ProgramLoadError(f"program lacks standard_metadata.{name}")
        return i

    def compile_fn(self, kind: str, args: str, body: list[str]) -> Callable:
        return self.ns.compile_fn(kind, args, body)

    # -- calculations ---------------------------------------------------------------------
    def calc_inputs(self, inputs: list[dict]) -> tuple[str, bool]:
        """Source of the `[(value, width), ...]` list a calculation hashes, and whether the
        payload follows. Like BMv2, fields and headers of invalid headers are left out;
        `self._parts` holds the same list as if every header were valid, `self._guards`
        the headers whose validity matters."""
        parts = []
        self._parts: list[tuple[str, int]] = []
        self._guards: list[int] = []
        payload = False

        def guarded(hname: str, w: Any) -> Any:
            hid = self.hid(hname)
            if hid in self.metadata:
                return w
            if hid not in self._guards:
                self._guards.append(hid)
            return f"({w} if V[{hid}] else 0)"

        for inp in inputs:
            t = inp["type"]
            if t == "field":
                i = self.fidx(inp["value"])
                w = f"P.VL.get({i}, 0)" if i in self.varbit_slots else self.field_width[i]
                parts.append(f"(F[{i}], {guarded(inp['value'][0], w)})")
                self._parts.append((f"F[{i}]", w))
            elif t == "hexstr":
                bw = int_literal(inp.get("bitwidth", 8), "calculation input bitwidth")
                parts.append(f"({int(inp['value'], 16)}, {bw})")
                self._parts.append((str(int(inp['value'], 16)), int(bw)))
            elif t == "header":
                h = inp["value"]
                for fname, w, _ in self.header_fields[h]:
                    i = self.field_index[(h, fname)]
                    w = f"P.VL.get({i}, 0)" if i in self.varbit_slots else w
                    parts.append(f"(F[{i}], {guarded(h, w)})")
                    self._parts.append((f"F[{i}]", w))
            elif t == "payload":
                payload = True
            elif t == "expression":
                bw = int_literal(inp.get("bitwidth", 32), "calculation input bitwidth")
                parts.append(f"({self.ex(inp['value'])}, {bw})")
                self._parts.append((self.ex(inp['value']), int(bw)))
            else:
                raise ProgramLoadError(f"unsupported calculation input '{t}'")
        return "[" + ", ".join(parts) + "]", payload

    def _packer(self, parts: str) -> str:
        """Source packing `[(value_src, width), ...]` to bytes; inline when byte-aligned."""
        items = self._parts
        if any(isinstance(w, str) for _, w in items):  # varbit: width known per packet
            return f"_pack({parts})"
        total = sum(w for _, w in items)
        if not items or total % 8:
            return f"_pack({parts})"
        shift = total
        terms = []
        for src, w in items:
            shift -= w
            terms.append(f"((({src}) & {(1 << w) - 1}) << {shift})")
        return f"({' | '.join(terms)}).to_bytes({total // 8}, 'big')"

    def calculation(self, name: str) -> str:
        """Name of a compiled function `(P) -> int` for a named calculation."""
        if type(name) is not str or name not in self.calcs:
            raise ProgramLoadError(f"unknown calculation {name!r:.60}")
        if name in self.calc_syms:
            return self.calc_syms[name]
        c = self.calcs[name]
        algo = c["algo"]
        if type(algo) is not str or algo not in hashes.ALGORITHMS:
            raise ProgramLoadError(f"hash algorithm {algo!r:.60} of '{name}' is not supported")
        algo_sym = self.const("algo", hashes.ALGORITHMS[algo])
        parts, payload = self.calc_inputs(c["input"])
        data = self._packer(parts)
        if self._guards:  # the fast packing when every header is valid, else skip the invalid
            valid = " and ".join(f"V[{h}]" for h in self._guards)
            data = f"({data} if {valid} else _pack({parts}))"
        data += " + _payload(P)" if payload else ""
        fn = self.compile_fn("calc", "P", [f"return {algo_sym}({data})"])
        sym = self.calc_syms[name] = self.const("calcfn", fn)
        return sym

    # -- whole program --------------------------------------------------------------------
    def build(self) -> Program:
        j = self.j
        self.layout()
        self.calcs = {c["name"]: c for c in j.get("calculations", [])}
        self.calc_syms: dict[str, str] = {}
        self.ns["_pack"] = hashes.pack_bits
        self.ns["_payload"] = lambda P: P.data[P.off:]
        self.ns["_look"] = self._make_lookahead()
        self.ns["_push"] = _push
        self.ns["_copy_vl"] = _copy_vl
        self.ns["_pop"] = _pop
        self.counters = {c["name"]: CounterArray(c["name"], c.get("size", 0)) for c in j.get("counter_arrays", [])}
        self.meters = {m["name"]: MeterArray(m["name"], m.get("size", 0), m.get("type", "packets"),
                                             bool(m.get("is_direct"))) for m in j.get("meter_arrays", [])}
        self.registers = {r["name"]: RegisterArray(r["name"], r["size"], r["bitwidth"])
                          for r in j.get("register_arrays", [])}
        self.value_sets = {v["name"]: ParseValueSet(v["name"], int(v.get("compressed_bitwidth", 0)),
                                                    int(v.get("max_size", 0)))
                           for v in j.get("parse_vsets", [])}
        self.actions: dict[str, ActionSpec] = {}
        self.actions_by_id: dict[int, ActionSpec] = {}
        for a in j.get("actions", []):
            prims = a.get("primitives", [])
            if any(p["op"] in ("_jump", "_jump_if_zero") for p in prims):
                body = self.action_with_jumps(prims)
            else:
                body = []
                for p in prims:
                    body += self.primitive(p)
            fn = self.compile_fn("act", "P, D", body)
            spec = ActionSpec(a["name"], a["id"], [(rd["name"], rd["bitwidth"]) for rd in a.get("runtime_data", [])], fn)
            self.actions_by_id[a["id"]] = spec
            # p4c may emit several actions with one name (e.g. NoAction copies); keep the first
            self.actions.setdefault(a["name"], spec)
        self.field_lists = {fl["id"]: [self.fidx(e["value"]) for e in fl.get("elements", []) if e.get("type") == "field"]
                            for fl in j.get("field_lists", [])}
        self.learn_lists = {ll["id"]: (ll["name"], [self.fidx(e["value"]) for e in ll.get("elements", [])
                                                    if e.get("type") == "field"])
                            for ll in j.get("learn_lists", [])}
        self.profiles: dict[str, ActionProfile] = {}
        self.tables: dict[str, Table] = {}
        prog = Program(j, self.field_index, self.field_width, self.header_index, self.header_fields,
                       self.metadata, self.stacks, self.errors, self.F0, self.V0, self.NX0,
                       self.actions, self.actions_by_id, self.tables, self.profiles, self.counters,
                       self.meters, self.registers, self.field_lists, self.learn_lists)
        prog.value_sets = self.value_sets
        prog.parser = self.build_parser()
        pipes = {p["name"]: p for p in j.get("pipelines", [])}
        for required in ("ingress", "egress"):
            if required not in pipes:
                raise ProgramLoadError(f"BMv2 JSON has no '{required}' pipeline")
        prog.ingress = self.build_pipeline(pipes["ingress"])
        prog.egress = self.build_pipeline(pipes["egress"])
        prog.verify_checksums, prog.update_checksums = self.build_checksums()
        prog.deparser = self.build_deparser()
        return prog

    def _make_lookahead(self) -> Callable:
        too_short = self.errors_value("PacketTooShort")

        def look(P, off: int, width: int) -> int:
            start = P.off * 8 + off
            end = start + width
            nbytes = (end + 7) // 8
            if nbytes > len(P.data):
                raise ParserException(too_short)
            first = start // 8
            chunk = int.from_bytes(P.data[first:nbytes], "big")
            return (chunk >> (nbytes * 8 - end)) & ((1 << width) - 1)
        return look

    def errors_value(self, name: str) -> int:
        return self.errors.get(name, 0)

    def build_extractors(self) -> list[Callable]:
        exts = []
        self.varbit_extractors: set[Callable] = set()
        too_short = self.errors_value("PacketTooShort")
        for name, hid in self.header_index.items():
            fields = self.header_fields[name]
            total = sum(w for _, w, _ in fields)
            base = self.header_base[hid]
            if any(base + i in self.varbit_slots for i in range(len(fields))):
                exts.append(self.build_varbit_extractor(hid, fields))
                continue
            if hid in self.metadata or total % 8:
                exts.append(None)
                continue
            nb = total // 8
            base = self.header_base[hid]
            body = ["o = P.off; d = P.data",
                    f"if o + {nb} > len(d): raise ParserException({too_short})",
                    f"x = int.from_bytes(d[o:o + {nb}], 'big'); P.off = o + {nb}"]
            shift = total
            for i, (_, w, signed) in enumerate(fields):
                shift -= w
                val = f"(x >> {shift}) & {(1 << w) - 1}" if w else "0"
                body.append(f"F[{base + i}] = _tcm({val}, {w})" if signed else f"F[{base + i}] = {val}")
            body.append(f"V[{hid}] = 1")
            exts.append(self.compile_fn("ext", "P", body))
        self.ns["_EXT"] = exts
        return exts

    def build_varbit_extractor(self, hid: int, fields: list[tuple[str, int, bool]]) -> Callable:
        """Extractor `(P, bits)` of a header with a varbit field (BMv2's `extract_VL`): the
        varbit field takes `bits` bits, which must be whole bytes (else ParserInvalidArgument)
        and within its largest size (else HeaderTooShort)."""
        base = self.header_base[hid]
        too_short = self.errors_value("PacketTooShort")
        hdr_too_short = self.errors_value("HeaderTooShort")
        invalid_arg = self.errors_value("ParserInvalidArgument")
        vslot = next(base + i for i in range(len(fields)) if base + i in self.varbit_slots)
        fixed = sum(w for i, (_, w, _) in enumerate(fields) if base + i != vslot)
        # BMv2: a size that is not whole bytes is ParserInvalidArgument, one above the
        # field's largest size HeaderTooShort
        body = [f"if n % 8: raise ParserException({invalid_arg})",
                f"if n < 0 or n > {self.varbit_slots[vslot]}: raise ParserException({hdr_too_short})",
                f"total = n + {fixed}; nb = total // 8; o = P.off; d = P.data",
                f"if o + nb > len(d): raise ParserException({too_short})",
                "x = int.from_bytes(d[o:o + nb], 'big'); P.off = o + nb; shift = total"]
        for i, (_, w, signed) in enumerate(fields):
            slot = base + i
            width = "n" if slot == vslot else str(w)
            body.append(f"shift -= {width}; _v = (x >> shift) & ((1 << {width}) - 1)")
            body.append(f"F[{slot}] = _tcm(_v, {w})" if signed else f"F[{slot}] = _v")
        body += [f"P.VL[{vslot}] = n", f"V[{hid}] = 1"]
        fn = self.compile_fn("extvl", "P, n", body)
        self.varbit_extractors.add(fn)
        return fn

    def _check_extract(self, hid: int, name: str, kind: str) -> None:
        ext = self.ns["_EXT"][hid]
        if ext is None:
            raise ProgramLoadError(f"cannot extract header '{name}' (not byte-aligned)")
        if (ext in self.varbit_extractors) != (kind == "extract_VL"):
            raise ProgramLoadError(f"'{kind}' of header '{name}' does not match its type "
                                   "(extract_VL is for headers with a varbit field)")

    def build_parser(self) -> Callable:
        parsers = self.j.get("parsers", [])
        if not parsers:
            raise ProgramLoadError("BMv2 JSON has no parser")
        parser = parsers[0]
        self.build_extractors()
        states: dict[str, Callable] = {}
        oob = self.errors_value("StackOutOfBounds")
        for st in parser.get("parse_states", []):
            body: list[str] = []
            for op in st.get("parser_ops", []):
                kind = op["op"]
                params = op.get("parameters", [])
                if kind in ("extract", "extract_VL"):
                    p0 = params[0]
                    args = "P"
                    if kind == "extract_VL":
                        size = params[1]
                        if size.get("type") == "expression" and "type" in size.get("value", {}):
                            size = size["value"]
                        args = f"P, {self.ex(size)}"
                    if p0["type"] == "regular":
                        hid = self.hid(p0["value"])
                        self._check_extract(hid, p0["value"], kind)
                        body.append(f"_EXT[{hid}]({args})")
                    elif p0["type"] == "stack":
                        sid = self.stack_id[p0["value"]]
                        size = len(self.stacks[p0["value"]])
                        self._check_extract(self.stacks[p0["value"]][0], p0["value"], kind)
                        body += [f"_i = NX[{sid}]",
                                 f"if _i >= {size}: raise ParserException({oob})",
                                 f"_EXT[STK[{sid}][_i]]({args}); NX[{sid}] = _i + 1"]
                    elif p0["type"] == "union_stack":
                        usid, elems, members = self.union_stacks[p0["value"][0]]
                        m = members.index(p0["value"][1])
                        self._check_extract(elems[0][m], f"{p0['value'][0]}.{p0['value'][1]}", kind)
                        ids = self.const("ustk", elems)
                        body += [f"_i = NX[{usid}]",
                                 f"if _i >= {len(elems)}: raise ParserException({oob})",
                                 f"_u = {ids}[_i]; _EXT[_u[{m}]]({args}); NX[{usid}] = _i + 1",
                                 f"for _k, _h in enumerate(_u): V[_h] = V[_h] if _k == {m} else 0"]
                    else:
                        raise ProgramLoadError(f"unsupported extract target '{p0['type']}'")
                elif kind == "set":
                    if params[0].get("type") == "field" and self.fidx(params[0]["value"]) in self.varbit_slots:
                        body += self._assign_vl(params[0], params[1])  # BMv2's parser set does assign_VL
                    else:
                        body.append(self.assign(params[0], self.ex(params[1])))
                elif kind == "verify":
                    body.append(f"if not {self.ex(params[0])}: raise ParserException({self.ex(params[1])})")
                elif kind == "primitive":
                    body += self.primitive(params[0])
                elif kind == "shift":
                    body.append(f"P.off += {int(params[0]['value'], 16) if params[0].get('type') == 'hexstr' else self.ex(params[0])}")
                elif kind == "advance":
                    too_short = self.errors_value("PacketTooShort")
                    body += [f"_n = ({self.ex(params[0])}) // 8",
                             f"if P.off + _n > len(P.data): raise ParserException({too_short})",
                             "P.off += _n"]
                else:
                    raise ProgramLoadError(f"unsupported parser op '{kind}'")
            keys = st.get("transition_key", [])
            key_parts = []
            key_widths = []
            for k in keys:
                if k["type"] == "lookahead":
                    w = k["value"][1]
                elif k["type"] == "field":
                    w = self.field_width[self.fidx(k["value"])] if k["value"][1] != "$valid$" else 1
                elif k["type"] == "stack_field":
                    first = self._header_name_by_hid(self.stacks[k["value"][0]][0])
                    w = dict((n, fw) for n, fw, _ in self.header_fields[first])[k["value"][1]]
                else:
                    w = 32
                key_parts.append((self.ex(k), ((w + 7) // 8) * 8))
                key_widths.append(w)
            if key_parts:
                expr = key_parts[0][0]
                for src, w in key_parts[1:]:
                    expr = f"(({expr}) << {w}) | ({src})"
                body.append(f"k = {expr}")
            if any(tr.get("type") == "parse_vset" for tr in st.get("transitions", [])):
                # value sets hold the key components concatenated without byte padding
                expr = f"(({key_parts[0][0]}) & {(1 << key_widths[0]) - 1})" if key_parts else "0"
                for (src, _), w in zip(key_parts[1:], key_widths[1:]):
                    expr = f"(({expr}) << {w}) | (({src}) & {(1 << w) - 1})"
                body.append(f"kc = {expr}")
            for tr in st.get("transitions", []):
                nxt = tr.get("next_state")
                nxt = "None" if nxt is None else str_literal(nxt, "next_state")
                # older p4c writes a default transition as {"value": "default"} without a type
                ttype = tr.get("type") or ("default" if tr.get("value") == "default" else "hexstr")
                if ttype == "default":
                    body.append(f"return {nxt}")
                    break
                if ttype == "hexstr":
                    val = int(tr["value"], 16)
                    mask = tr.get("mask")
                    if mask:
                        body.append(f"if (k & {int(mask, 16)}) == {val & int(mask, 16)}: return {nxt}")
                    else:
                        body.append(f"if k == {val}: return {nxt}")
                elif ttype == "parse_vset":
                    vs = self.value_sets.get(tr.get("value"))
                    if vs is None:
                        raise ProgramLoadError(f"unknown parser value set '{tr.get('value')}'")
                    mask = _compress(int(tr["mask"], 16), key_widths) if tr.get("mask") else (1 << vs.bitwidth) - 1
                    body.append(f"if {self.const('vset', vs)}.matches(kc, {mask}): return {nxt}")
                else:
                    raise ProgramLoadError(f"unsupported transition type '{ttype}'")
            else:
                body.append("return None")
            states[st["name"]] = self.compile_fn("st", "P", body)
        init = parser.get("init_state")
        if init not in states:
            raise ProgramLoadError(f"parser init state '{init}' not defined")
        perr = self.sm_opt("parser_error")
        no_error = self.errors_value("NoError")

        def parse(P: PacketState) -> None:
            # BMv2 always stores the parser's error code, NoError included (p4c may number it 1)
            if perr is not None:
                P.F[perr] = no_error
            state = init
            try:
                while state is not None:
                    state = states[state](P)
            except ParserException as exc:
                if perr is not None:
                    P.F[perr] = exc.code
        return parse

    def build_pipeline(self, pipe: dict) -> Callable:
        nodes: dict[str, Callable] = {}
        for prof in pipe.get("action_profiles", []):
            sel = prof.get("selector")
            selector = None
            if sel:
                algo = hashes.ALGORITHMS.get(sel.get("algo"))
                if algo is None:
                    raise ProgramLoadError(f"selector algorithm '{sel.get('algo')}' is not supported")
                parts, _ = self.calc_inputs(sel.get("input", []))
                salgo = self.const("salgo", algo)
                selector = self.compile_fn("sel", "P", [f"return {salgo}(_pack({parts}))"])
            self.profiles[prof["name"]] = ActionProfile(prof["name"], {}, prof.get("max_size", 0), selector)
        direct_counters = {c["binding"]: c for c in self.j.get("counter_arrays", []) if c.get("is_direct")}
        direct_meters = {m["binding"]: m for m in self.j.get("meter_arrays", []) if m.get("is_direct")}
        for t in pipe.get("tables", []):
            nodes[t["name"]] = self.build_table(t, direct_counters, direct_meters)
        for c in pipe.get("conditionals", []):
            cond = self.compile_fn("cond", "P", [f"return {self.ex(c['expression'])}"])
            nodes[c["name"]] = _cond_node(cond, c.get("true_next"), c.get("false_next"))
        for ac in pipe.get("action_calls", []):
            spec = self.actions_by_id[ac["action_id"]]
            nodes[ac["name"]] = _call_node(spec.fn, ac.get("next_node"))
        init = pipe.get("init_table")

        def run(P: PacketState) -> None:
            node = init
            try:
                while node is not None:
                    node = nodes[node](P)
            except ExitControl:
                pass
        return run

    def build_table(self, t: dict, direct_counters: dict, direct_meters: dict) -> Callable:
        keys: list[KeyField] = []
        getters = []
        for k in t.get("key", []):
            mt = k["match_type"]
            target = k["target"]
            if mt == "valid":
                hname = target if isinstance(target, str) else target[0]
                getters.append(f"V[{self.hid(hname)}]")
                keys.append(KeyField(mt, k.get("name", hname), 1))
                continue
            if target[1] == "$valid$":  # p4c's form of `hdr.x.isValid(): exact`
                getters.append(f"V[{self.hid(target[0])}]")
                keys.append(KeyField(mt, k.get("name", f"{target[0]}.$valid$"), 1))
                continue
            i = self.fidx(target)
            w = self.field_width[i]
            mask = k.get("mask")
            getters.append(f"(F[{i}] & {int(mask, 16)})" if mask else f"F[{i}]")
            keys.append(KeyField(mt, k.get("name", f"{target[0]}.{target[1]}"), w))
        actions = {}
        for aid in t.get("action_ids", []):
            spec = self.actions_by_id[aid]
            actions[spec.name] = spec
        profile = self.profiles.get(t.get("action_profile")) if t.get("action_profile") else None
        if profile is not None:
            profile.actions.update(actions)
        dmeter = None
        dm = direct_meters.get(t["name"])
        if t.get("direct_meters"):
            dm = next((m for m in self.j.get("meter_arrays", []) if m["name"] == t["direct_meters"]), dm)
        if dm is not None:
            dmeter = self.meters[dm["name"]]
        table = Table(t["name"], keys, actions, t.get("max_size", 0), t.get("type", "simple"), profile,
                      bool(t.get("with_counters")) or t["name"] in direct_counters, dmeter)
        self.tables[t["name"]] = table
        de = t.get("default_entry")
        if de:
            spec = self.actions_by_id[de["action_id"]]
            table.default_action = spec.name
            table.default_data = tuple(int(x, 16) for x in de.get("action_data", []))
            table.default_const = bool(de.get("action_const"))
            table.initial_default = (table.default_action, table.default_data)
        from . import match as mm
        for ent in t.get("entries", []):
            key = []
            for kf, mk in zip(keys, ent["match_key"]):
                kt = mk["match_type"]
                if kt == "exact":
                    key.append(mm.Exact(int(mk["key"], 16)))
                elif kt == "lpm":
                    key.append(mm.Lpm(int(mk["key"], 16), mk["prefix_length"]))
                elif kt == "ternary":
                    key.append(mm.Ternary(int(mk["key"], 16), int(mk["mask"], 16)))
                elif kt == "range":
                    key.append(mm.Range(int(mk["start"], 16), int(mk["end"], 16)))
                elif kt == "optional":
                    if mk.get("mask") and int(mk["mask"], 16) == 0:
                        key.append(mm.Optional(0, True))
                    else:
                        key.append(mm.Optional(int(mk["key"], 16)))
                elif kt == "valid":
                    key.append(mm.Valid(bool(int(mk["key"], 16))))
                else:
                    raise ProgramLoadError(f"unsupported const entry match type '{kt}'")
            ae = ent["action_entry"]
            spec = self.actions_by_id[ae["action_id"]]
            table.add(key, spec.name, [int(x, 16) for x in ae.get("action_data", [])],
                      ent.get("priority") if table.match_type == "ternary" else None)
        table.const_entries = bool(t.get("entries"))
        getter = self.compile_fn("key", "P",
                                 [f"return ({', '.join(getters)}{',' if getters else ''})"])
        nt = t.get("next_tables", {})
        hit_next, miss_next = nt.get("__HIT__"), nt.get("__MISS__")
        by_hit = "__HIT__" in nt or "__MISS__" in nt
        base_next = t.get("base_default_next")
        next_by_action = {self.actions_by_id[aid].name: nt.get(self.actions_by_id[aid].name, base_next)
                          for aid in t.get("action_ids", [])}
        acts = actions
        result_target = None
        if dm is not None and dm.get("result_target"):
            result_target = self.fidx(dm["result_target"])
        counting = table.with_counters
        profile_ = profile

        def apply(P: PacketState):
            e = table.lookup(getter(P))
            if e is not None:
                if counting:
                    e.packets += 1
                    e.bytes += P.length
                if e.meter is not None and result_target is not None:
                    P.F[result_target] = e.meter.execute(1 if table.direct_meter.type == "packets" else P.length,
                                                         P.now_us)
                if profile_ is None:
                    name, data = e.action, e.action_data
                elif e.member is not None:
                    name, data = profile_.members[e.member]
                else:
                    mbrs = profile_.groups.get(e.group) or []
                    if not mbrs:
                        name, data = table.default_action, table.default_data
                    else:
                        h = profile_.selector(P) if profile_.selector else 0
                        name, data = profile_.members[mbrs[h % len(mbrs)]]
                acts[name].fn(P, data)
                if by_hit:
                    return hit_next
                return next_by_action.get(name, base_next)
            if counting:
                table.default_packets += 1
                table.default_bytes += P.length
            name = table.default_action
            if name is not None:
                acts[name].fn(P, table.default_data) if name in acts else self.actions[name].fn(P, table.default_data)
            if by_hit:
                return miss_next
            return next_by_action.get(name, base_next) if name is not None else base_next
        return apply

    def build_checksums(self) -> tuple[Callable, Callable]:
        verify_body: list[str] = []
        update_body: list[str] = []
        cerr = self.sm_opt("checksum_error")
        for c in self.j.get("checksums", []):
            calc = self.calculation(c["calculation"])
            target = self.fidx(c["target"])
            cond = self.ex(c["if_cond"]) if c.get("if_cond") else "1"
            w = self.field_width[target]
            if c.get("verify", True) and cerr is not None:
                verify_body.append(f"if {cond} and ({calc}(P) & {(1 << w) - 1}) != F[{target}]: F[{cerr}] = 1")
            if c.get("update", True):
                update_body.append(f"if {cond}: F[{target}] = {calc}(P) & {(1 << w) - 1}")
        return (self.compile_fn("verify_checksums", "P", verify_body),
                self.compile_fn("update_checksums", "P", update_body))

    def build_deparser(self) -> Callable:
        deps = self.j.get("deparsers", [])
        order = deps[0].get("order", []) if deps else []
        body = ["out = []"]
        # method calls p4c places in the deparser run after the checksum update, before emission
        for prim in (deps[0].get("primitives") or []) if deps else []:
            body += self.primitive(prim)
        for name in order:
            hid = self.hid(name)
            fields = self.header_fields[name]
            total = sum(w for _, w, _ in fields)
            base = self.header_base[hid]
            if any(base + i in self.varbit_slots for i in range(len(fields))):
                widths = [(base + i, f"P.VL.get({base + i}, 0)" if base + i in self.varbit_slots else w)
                          for i, (_, w, _) in enumerate(fields)]
                pairs = ", ".join(f"(F[{slot}], {w})" for slot, w in widths)
                body.append(f"if V[{hid}]: out.append(_pack([{pairs}]))")
                continue
            parts = []
            shift = total
            for i, (_, w, _) in enumerate(fields):
                shift -= w
                if w:
                    parts.append(f"((F[{base + i}] & {(1 << w) - 1}) << {shift})")
            expr = " | ".join(parts) or "0"
            body.append(f"if V[{hid}]: out.append(({expr}).to_bytes({total // 8}, 'big'))")
        body.append("out.append(P.data[P.off:])")
        body.append("return b''.join(out)")
        return self.compile_fn("deparse", "P", body)


def _compress(padded: int, widths: list[int]) -> int:
    """A select-key value in byte-padded layout turned into the unpadded concatenation."""
    out = 0
    shift = sum((w + 7) // 8 * 8 for w in widths)
    for w in widths:
        shift -= (w + 7) // 8 * 8
        out = (out << w) | ((padded >> shift) & ((1 << w) - 1))
    return out


_LEGACY_ARITH = {"add_to_field": "+", "subtract_from_field": "-", "add": "+", "subtract": "-",
                 "bit_xor": "^", "bit_or": "|", "bit_and": "&", "shift_left": "<<", "shift_right": ">>"}


def _cond_node(cond: Callable, t: str | None, f: str | None) -> Callable:
    def node(P: PacketState):
        return t if cond(P) else f
    return node


def _call_node(fn: Callable, nxt: str | None) -> Callable:
    def node(P: PacketState):
        fn(P, ())
        return nxt
    return node


def _push(P: PacketState, sid: int, ids: list[int], count: int, spans: dict) -> None:
    V = P.V
    n = len(ids)
    for i in range(n - 1, -1, -1):
        src = i - count
        if src >= 0:
            V[ids[i]] = V[ids[src]]
            _copy_header(P, ids[i], ids[src], spans)
        else:
            V[ids[i]] = 0
    P.NX[sid] = min(n, P.NX[sid] + count)


def _pop(P: PacketState, sid: int, ids: list[int], count: int, spans: dict) -> None:
    V = P.V
    n = len(ids)
    for i in range(n):
        src = i + count
        if src < n:
            V[ids[i]] = V[ids[src]]
            _copy_header(P, ids[i], ids[src], spans)
        else:
            V[ids[i]] = 0
    P.NX[sid] = max(0, P.NX[sid] - count)


def _copy_header(P: PacketState, dst: int, src: int, spans: dict) -> None:
    db, n = spans[dst]
    sb, _ = spans[src]
    P.F[db:db + n] = P.F[sb:sb + n]
    if P.VL:
        _copy_vl(P, db, sb, n)


def _copy_vl(P: PacketState, dst: int, src: int, n: int) -> None:
    """Copy the varbit lengths of the `n` slots from `src` on to the slots from `dst` on."""
    for k in range(n):
        if src + k in P.VL:
            P.VL[dst + k] = P.VL[src + k]
        else:
            P.VL.pop(dst + k, None)


def load_program(bmv2_json: dict, log: Callable[[str], None] | None = None) -> Program:
    """Compile a BMv2 JSON dict into a Program; raises ProgramLoadError when it cannot."""
    if not isinstance(bmv2_json, dict):
        raise ProgramLoadError("BMv2 JSON must be an object")
    messages: list[str] = []
    comp = _Compiler(bmv2_json, log or messages.append)
    try:
        prog = comp.build()
    except ProgramLoadError:
        raise
    except (KeyError, IndexError, TypeError, ValueError, AttributeError, OverflowError, RecursionError) as exc:
        raise ProgramLoadError(f"malformed BMv2 JSON: {type(exc).__name__}: {str(exc)[:200]}") from None
    prog.log = messages
    return prog
