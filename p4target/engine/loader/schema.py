"""BMv2 JSON checked at load time, at least as strictly as BMv2's `P4Objects::init_objects`.

Every node type, shape, required key, value kind and name reference BMv2 checks is checked here,
before anything is built, and a failure names its JSON path, e.g.
`actions[3].primitives[0].parameters[1]: expression node needs "type"`. Where BMv2 would load
JSON that cannot run (no deparser, a dangling next state), the program is refused too. Keys BMv2
falls back on when absent (`action_ids` -> `actions` by name, `with_counters`, `is_direct`,
`verify`/`update`, a transition without `type`...) may stay absent.
"""
from __future__ import annotations

import re
from typing import Any

from .. import hashes
from ..errors import ProgramLoadError

# Shapes today's embedded compiler (p4target/compiler) writes but BMv2 refuses:
#  - a bare `{"op", "left", "right"}` node where BMv2 needs `{"type": "expression", "value": {...}}`,
#    and a typed node where BMv2 reads an operation (the value of an "expression" node);
#  - `runtime_data` nodes inside expressions (BMv2 reads action data there as `local`), and the
#    field offset of `access_field` as a hexstr node (BMv2 reads a plain integer);
#  - the key match kind "optional" (p4c writes "ternary");
#  - primitives "resubmit_preserving_field_list" / "recirculate_preserving_field_list" (p4c writes
#    "resubmit" / "recirculate") and `log_msg` without its parameters vector;
#  - a parser `set` whose source is not a field, hexstr, lookahead or expression node.
# The switch accepts them while this is True so the suite stays green; it goes (set to False,
# then removed) once the compiler writes BMv2's shapes (issue 17, point 1).
ALLOW_EMBEDDED_COMPILER_SHAPES = True

MAJOR_VERSION, MAX_MINOR_VERSION = 2, 24  # BMv2 1.15's required_major / max_minor_version

# BMv2's `build_expression`: the node types an expression may have
EXPRESSION_TYPES = frozenset({"expression", "header", "field", "bool", "hexstr", "local", "register",
                              "header_stack", "stack_field", "header_union", "header_union_stack"})
# BMv2's ExprOpcodesMap
OPERATORS = frozenset({"+", "-", "%", "/", "*", "<<", ">>", "==", "!=", ">", "<", ">=", "<=", "and", "or",
                       "not", "&", "|", "^", "~", "valid", "valid_union", "?", "two_comp_mod", "usat_cast",
                       "sat_cast", "d2b", "b2d", "dereference_stack", "dereference_header_stack",
                       "dereference_union_stack", "last_stack_index", "size_stack", "access_field",
                       "access_union_header"})
# BMv2's `process_single_param`: the node types a primitive parameter may have
PARAMETER_TYPES = frozenset({"hexstr", "parameters_vector", "field_list", "runtime_data", "header", "field",
                             "calculation", "meter_array", "counter_array", "register_array", "header_stack",
                             "expression", "register", "extern", "string", "stack_field", "header_union",
                             "header_union_stack"})
# primitives of BMv2's core and of simple_switch, with their number of parameters
PRIMITIVES = {
    "assign": 2, "assign_VL": 2, "assign_header": 2, "assign_union": 2, "assign_header_stack": 2,
    "assign_union_stack": 2, "push": 2, "pop": 2, "assume": 1, "assert": 1, "exit": 0, "log_msg": 2,
    "_jump": 1, "_jump_if_zero": 2,
    "modify_field": 2, "modify_field_rng_uniform": 3, "add_to_field": 2, "subtract_from_field": 2,
    "add": 3, "subtract": 3, "bit_xor": 3, "bit_or": 3, "bit_and": 3, "shift_left": 3, "shift_right": 3,
    "drop": 0, "mark_to_drop": 1, "generate_digest": 2, "add_header": 1, "add_header_fast": 1,
    "remove_header": 1, "copy_header": 2, "clone_ingress_pkt_to_egress": 2, "clone_egress_pkt_to_egress": 2,
    "resubmit": 1, "recirculate": 1, "modify_field_with_hash_based_offset": 4, "no_op": 0,
    "execute_meter": 3, "count": 2, "register_read": 3, "register_write": 3, "truncate": 1,
}
# parameters whose kind a primitive fixes (BMv2 casts them when the action runs; a program whose
# action could not run is refused at load): primitive -> {index: accepted parameter types}
PARAMETER_KINDS = {
    "count": {0: {"counter_array"}}, "execute_meter": {0: {"meter_array"}, 2: {"field"}},
    "register_read": {0: {"field", "expression"}, 1: {"register_array"}}, "register_write": {0: {"register_array"}},
    "modify_field_with_hash_based_offset": {2: {"calculation"}}, "push": {0: {"header_stack"}},
    "pop": {0: {"header_stack"}}, "mark_to_drop": {0: {"header"}}, "log_msg": {0: {"string"}, 1: {"parameters_vector"}},
    "assign_union": {0: {"header_union"}, 1: {"header_union"}},
    "assign_header_stack": {0: {"header_stack"}, 1: {"header_stack"}},
    "add_header": {0: {"header", "expression"}}, "remove_header": {0: {"header", "expression"}},
    "add_header_fast": {0: {"header", "expression"}},
    "assign_header": {0: {"header", "expression"}, 1: {"header", "expression"}},
    "copy_header": {0: {"header", "expression"}, 1: {"header", "expression"}},
}
_COMPILER_PRIMITIVES = {"resubmit_preserving_field_list": 1, "recirculate_preserving_field_list": 1}
_COMPILER_EXPRESSION_TYPES = frozenset({"runtime_data"})
# the kind of value an operator gives (BMv2's ExprOpcodesUtils::get_opcode_type); others: data
_RESULT_KIND = {**{op: "bool" for op in ("==", "!=", ">", "<", ">=", "<=", "and", "or", "not", "valid",
                                          "valid_union", "d2b")},
                "dereference_header_stack": "header", "dereference_stack": "header",
                "dereference_union_stack": "header_union"}
KEY_MATCH_TYPES = frozenset({"exact", "lpm", "ternary", "valid", "range"})
TABLE_MATCH_TYPES = frozenset({"exact", "lpm", "ternary", "range"})
TABLE_TYPES = frozenset({"simple", "indirect", "indirect_ws"})
PARSER_OPS = {"extract": 1, "extract_VL": 2, "set": 2, "verify": 2, "primitive": 1, "shift": 1, "advance": 1}
TRANSITION_KEY_TYPES = frozenset({"field", "stack_field", "union_stack_field", "lookahead"})
TRANSITION_TYPES = frozenset({"hexstr", "default", "parse_vset"})
CALCULATION_INPUTS = frozenset({"field", "hexstr", "header", "payload"})
# errors and enum values: BMv2 takes [0, 2**31 - 1)
_MAX_CODE = 2 ** 31 - 1
_MAX_WIDTH = 1 << 16  # widths beyond this are refused (no real program comes near; bounds memory)
_HEX = re.compile(r"-?0[xX][0-9a-fA-F]+\Z|-?[0-9a-fA-F]+\Z")


class _Invalid(Exception):
    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}" if path else message)


def validate(j: Any, allow_compiler_shapes: bool | None = None) -> None:
    """Raise ProgramLoadError naming the JSON path of the first thing BMv2 would refuse (or that
    cannot run). `allow_compiler_shapes` overrides ALLOW_EMBEDDED_COMPILER_SHAPES."""
    allow = ALLOW_EMBEDDED_COMPILER_SHAPES if allow_compiler_shapes is None else allow_compiler_shapes
    try:
        _Validator(j, allow).run()
    except _Invalid as exc:
        raise ProgramLoadError(str(exc)) from None
    except RecursionError:
        raise ProgramLoadError("BMv2 JSON is nested too deeply") from None


def _nbytes(hexstr: str) -> int:
    """Bytes of a hex string as BMv2's ByteContainer reads it (sign and 0x prefix dropped)."""
    digits = hexstr.lstrip("-")
    if digits[:2] in ("0x", "0X"):
        digits = digits[2:]
    return (len(digits) + 1) // 2


class _Validator:
    def __init__(self, j: Any, allow: bool) -> None:
        self.j = j
        self.allow = allow
        self.primitives = dict(PRIMITIVES, **(_COMPILER_PRIMITIVES if allow else {}))
        self.key_match_types = KEY_MATCH_TYPES | ({"optional"} if allow else set())

    # -- value kinds ------------------------------------------------------------------------
    @staticmethod
    def fail(path: str, message: str) -> None:
        raise _Invalid(path, message)

    def obj(self, v: Any, path: str) -> dict:
        if not isinstance(v, dict):
            self.fail(path, f"must be an object, got {_kind(v)}")
        return v

    def arr(self, v: Any, path: str, size: int | None = None) -> list:
        if not isinstance(v, list):
            self.fail(path, f"must be an array, got {_kind(v)}")
        if size is not None and len(v) != size:
            self.fail(path, f"must be an array of {size} items, got {len(v)}")
        return v

    def string(self, v: Any, path: str) -> str:
        if type(v) is not str:
            self.fail(path, f"must be a string, got {_kind(v)}")
        return v

    def integer(self, v: Any, path: str, lo: int | None = None, hi: int | None = None) -> int:
        if type(v) is not int:
            self.fail(path, f"must be an integer, got {_kind(v)}")
        if (lo is not None and v < lo) or (hi is not None and v > hi):
            self.fail(path, f"{v} is out of range [{lo}, {hi}]")
        return v

    def boolean(self, v: Any, path: str) -> bool:
        if type(v) is not bool:
            self.fail(path, f"must be a boolean, got {_kind(v)}")
        return v

    def hexstr(self, v: Any, path: str) -> str:
        if type(v) is not str or not _HEX.match(v):
            self.fail(path, f"must be a hexadecimal string, got {_kind(v)}")
        return v

    def key(self, o: dict, name: str, path: str) -> Any:
        if name not in o:
            self.fail(path, f'needs "{name}"')
        return o[name]

    def items(self, name: str) -> list:
        """A top-level list (absent: empty, as BMv2 reads a missing key)."""
        v = self.j.get(name, [])
        return [] if v is None else self.arr(v, name)

    def named(self, name: str, ids: bool = True) -> dict[str, dict]:
        """Objects of a top-level list by name; names and ids must be unique and well typed."""
        out: dict[str, dict] = {}
        seen: set[int] = set()
        for i, o in enumerate(self.items(name)):
            p = f"{name}[{i}]"
            self.obj(o, p)
            n = self.string(self.key(o, "name", p), f"{p}.name")
            if n in out:
                self.fail(f"{p}.name", f"duplicate name '{n}'")
            if ids:
                oid = self.integer(self.key(o, "id", p), f"{p}.id")
                if oid in seen:
                    self.fail(f"{p}.id", f"duplicate id {oid}")
                seen.add(oid)
            out[n] = o
        return out

    # -- whole program --------------------------------------------------------------------
    def run(self) -> None:
        j = self.obj(self.j, "")
        self.meta(j)
        self.layout()
        self.errors = self.codes("errors")
        for i, e in enumerate(self.items("enums")):
            self.obj(e, f"enums[{i}]")
            self.string(self.key(e, "name", f"enums[{i}]"), f"enums[{i}].name")
            self.codes_of(e.get("entries", []), f"enums[{i}].entries")
        self.calcs = self.named("calculations")
        for n, c in self.calcs.items():
            self.calculation(c, self.path_of("calculations", n))
        self.counters = self.named("counter_arrays")
        self.meters = self.named("meter_arrays")
        self.registers = self.named("register_arrays")
        self.vsets = self.named("parse_vsets")
        self.externs = self.named("extern_instances")
        for n, e in self.externs.items():
            self.fail(f"{self.path_of('extern_instances', n)}.type",
                      f"extern type {e.get('type')!r:.40} is not supported by this switch")
        self.stateful()
        self.actions()
        self.parsers()
        self.deparsers()
        self.pipelines()
        self.checksums()
        self.field_lists()

    def path_of(self, name: str, obj_name: str) -> str:
        for i, o in enumerate(self.items(name)):
            if isinstance(o, dict) and o.get("name") == obj_name:
                return f"{name}[{i}]"
        return name

    def meta(self, j: dict) -> None:
        meta = j.get("__meta__")
        if meta is None:
            return
        self.obj(meta, "__meta__")
        if "version" not in meta:
            return
        major, minor = self.arr(meta["version"], "__meta__.version", 2)
        self.integer(major, "__meta__.version[0]")
        self.integer(minor, "__meta__.version[1]")
        if major != MAJOR_VERSION:
            self.fail("__meta__.version", f"BMv2 needs JSON format major version {MAJOR_VERSION}, got {major}")
        if minor > MAX_MINOR_VERSION:
            self.fail("__meta__.version", f"the newest JSON format BMv2 reads is {MAJOR_VERSION}.{MAX_MINOR_VERSION}, "
                                          f"got {major}.{minor}")

    def codes_of(self, entries: Any, path: str) -> dict[str, int]:
        out: dict[str, int] = {}
        for i, e in enumerate(self.arr(entries, path)):
            self.arr(e, f"{path}[{i}]", 2)
            n = self.string(e[0], f"{path}[{i}][0]")
            v = self.integer(e[1], f"{path}[{i}][1]", 0, _MAX_CODE - 1)
            if n in out or v in out.values():
                self.fail(f"{path}[{i}]", f"duplicate name or value ({n!r}, {v})")
            out[n] = v
        return out

    def codes(self, name: str) -> dict[str, int]:
        return self.codes_of(self.items(name), name)

    # -- headers ----------------------------------------------------------------------------
    def layout(self) -> None:
        self.types = self.named("header_types")
        self.type_fields: dict[str, dict[str, int | str]] = {}
        for n, t in self.types.items():
            p = self.path_of("header_types", n)
            fields: dict[str, int | str] = {}
            varbits = 0
            for i, f in enumerate(self.arr(self.key(t, "fields", p), f"{p}.fields")):
                fp = f"{p}.fields[{i}]"
                self.arr(f, fp)
                if not 2 <= len(f) <= 4:
                    self.fail(fp, f"a field is [name, width] or [name, width, signed(, saturating)], got {len(f)} items")
                fname = self.string(f[0], f"{fp}[0]")
                if fname in fields:
                    self.fail(f"{fp}[0]", f"duplicate field '{fname}'")
                if f[1] == "*":
                    varbits += 1
                    self.integer(self.key(t, "max_length", p), f"{p}.max_length", 0, _MAX_WIDTH // 8)
                else:
                    self.integer(f[1], f"{fp}[1]", 0, _MAX_WIDTH)
                for k in range(2, len(f)):
                    self.boolean(f[k], f"{fp}[{k}]")
                fields[fname] = f[1]
            if varbits > 1:
                self.fail(f"{p}.fields", "a header type has at most one variable-length field")
            self.type_fields[n] = fields
        self.headers = self.named("headers")
        self.header_ids: dict[int, str] = {}
        for n, h in self.headers.items():
            p = self.path_of("headers", n)
            ht = self.string(self.key(h, "header_type", p), f"{p}.header_type")
            if ht not in self.types:
                self.fail(f"{p}.header_type", f"unknown header type '{ht}'")
            if "metadata" in h:
                self.boolean(h["metadata"], f"{p}.metadata")
            self.header_ids[h["id"]] = n
        self.stacks = self.named("header_stacks")
        for n, s in self.stacks.items():
            p = self.path_of("header_stacks", n)
            ht = self.string(self.key(s, "header_type", p), f"{p}.header_type")
            if ht not in self.types:
                self.fail(f"{p}.header_type", f"unknown header type '{ht}'")
            ids = self.arr(self.key(s, "header_ids", p), f"{p}.header_ids")
            if not ids:
                self.fail(f"{p}.header_ids", "a header stack needs at least one header")
            for i, hid in enumerate(ids):
                hname = self.header_by_id(hid, f"{p}.header_ids[{i}]")
                if self.headers[hname]["header_type"] != ht:
                    self.fail(f"{p}.header_ids[{i}]", f"header '{hname}' is not of the stack's type '{ht}'")
        self.union_types = self.named("header_union_types")
        for n, u in self.union_types.items():
            p = self.path_of("header_union_types", n)
            for i, m in enumerate(self.arr(self.key(u, "headers", p), f"{p}.headers")):
                self.arr(m, f"{p}.headers[{i}]", 2)
                self.string(m[0], f"{p}.headers[{i}][0]")
                if self.string(m[1], f"{p}.headers[{i}][1]") not in self.types:
                    self.fail(f"{p}.headers[{i}][1]", f"unknown header type '{m[1]}'")
        self.unions = self.named("header_unions")
        self.union_ids: dict[int, str] = {}
        for n, u in self.unions.items():
            p = self.path_of("header_unions", n)
            if self.string(self.key(u, "union_type", p), f"{p}.union_type") not in self.union_types:
                self.fail(f"{p}.union_type", f"unknown header union type '{u['union_type']}'")
            for i, hid in enumerate(self.arr(self.key(u, "header_ids", p), f"{p}.header_ids")):
                self.header_by_id(hid, f"{p}.header_ids[{i}]")
            self.union_ids[u["id"]] = n
        self.union_stacks = self.named("header_union_stacks")
        for n, us in self.union_stacks.items():
            p = self.path_of("header_union_stacks", n)
            if self.string(self.key(us, "union_type", p), f"{p}.union_type") not in self.union_types:
                self.fail(f"{p}.union_type", f"unknown header union type '{us['union_type']}'")
            for i, uid in enumerate(self.arr(self.key(us, "header_union_ids", p), f"{p}.header_union_ids")):
                if type(uid) is not int or uid not in self.union_ids:
                    self.fail(f"{p}.header_union_ids[{i}]", f"unknown header union id {uid!r:.40}")

    def header_by_id(self, hid: Any, path: str) -> str:
        if type(hid) is not int or hid not in self.header_ids:
            self.fail(path, f"unknown header id {hid!r:.40}")
        return self.header_ids[hid]

    def header(self, v: Any, path: str) -> str:
        if self.string(v, path) not in self.headers:
            self.fail(path, f"unknown header '{v}'")
        return v

    def field(self, v: Any, path: str, valid_ok: bool = True) -> None:
        """A field reference [header, field] (`$valid$` is BMv2's hidden validity field)."""
        self.arr(v, path, 2)
        h = self.header(v[0], f"{path}[0]")
        f = self.string(v[1], f"{path}[1]")
        if f == "$valid$" and valid_ok:
            return
        if f not in self.type_fields[self.headers[h]["header_type"]]:
            self.fail(path, f"unknown field '{h}.{f}'")

    def stack_field(self, v: Any, path: str) -> None:
        self.arr(v, path, 2)
        s = self.string(v[0], f"{path}[0]")
        if s not in self.stacks:
            self.fail(f"{path}[0]", f"unknown header stack '{s}'")
        if self.string(v[1], f"{path}[1]") not in self.type_fields[self.stacks[s]["header_type"]]:
            self.fail(f"{path}[1]", f"unknown field '{v[1]}' of stack '{s}'")

    def ref(self, table: dict, kind: str, v: Any, path: str) -> str:
        if self.string(v, path) not in table:
            self.fail(path, f"unknown {kind} '{v}'")
        return v

    # -- expressions ----------------------------------------------------------------------
    def expression(self, e: Any, path: str) -> str | None:
        """A node BMv2 passes to build_expression: null, or {"type": ..., "value": ...}. Returns
        the kind of value it gives (BMv2's ExprType: data, bool, header, ...; None for null)."""
        if e is None:
            return None
        self.obj(e, path)
        if "type" not in e:
            if self.allow and "op" in e:  # a bare operation node (see ALLOW_EMBEDDED_COMPILER_SHAPES)
                return self.operation(e, path)
            self.fail(path, 'expression node needs "type"' + (
                ' (a bare {"op", "left", "right"} node must be {"type": "expression", "value": {...}})'
                if "op" in e else ""))
        t = self.string(e["type"], f"{path}.type")
        if t not in EXPRESSION_TYPES and not (self.allow and t in _COMPILER_EXPRESSION_TYPES):
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
        if "type" in v and "op" not in v:
            if not self.allow:  # BMv2 reads this node's "op": a typed node here has none
                self.fail(path, 'an operation needs "op" (this is a typed node inside an expression node)')
            return self.expression(v, path)
        op = self.string(self.key(v, "op", path), f"{path}.op")
        if op not in OPERATORS:
            self.fail(f"{path}.op", f"unknown operator '{op}'")
        if "left" not in v or "right" not in v:
            self.fail(path, 'an operation needs "left" and "right" (null when unused)')
        if op in ("access_field", "access_union_header"):
            want = "header" if op == "access_field" else "header_union"
            if self.expression(v["left"], f"{path}.left") != want:
                self.fail(f"{path}.left", f"'{op}' needs a {want.replace('_', ' ')} on its left")
            if not (self.allow and isinstance(v["right"], dict) and v["right"].get("type") == "hexstr"):
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

    # -- stateful objects, calculations ----------------------------------------------------
    def stateful(self) -> None:
        for n, c in self.counters.items():
            p = self.path_of("counter_arrays", n)
            self.integer(c.get("size", 0), f"{p}.size", 0)
            if c.get("is_direct") is not None:
                self.boolean(c["is_direct"], f"{p}.is_direct")
        for n, m in self.meters.items():
            p = self.path_of("meter_arrays", n)
            if m.get("type") not in ("packets", "bytes"):
                self.fail(f"{p}.type", f"invalid meter type {m.get('type')!r:.40}")
            self.integer(m.get("size", 0), f"{p}.size", 0)
            if "rate_count" in m:
                self.integer(m["rate_count"], f"{p}.rate_count", 0)
            if m.get("is_direct") is not None and self.boolean(m["is_direct"], f"{p}.is_direct"):
                self.field(self.key(m, "result_target", p), f"{p}.result_target", valid_ok=False)
        for n, r in self.registers.items():
            p = self.path_of("register_arrays", n)
            self.integer(self.key(r, "size", p), f"{p}.size", 0)
            self.integer(self.key(r, "bitwidth", p), f"{p}.bitwidth", 1, _MAX_WIDTH)
        for n, v in self.vsets.items():
            p = self.path_of("parse_vsets", n)
            self.integer(self.key(v, "compressed_bitwidth", p), f"{p}.compressed_bitwidth", 0, _MAX_WIDTH)
            if "max_size" in v:
                self.integer(v["max_size"], f"{p}.max_size", 0)

    def calculation(self, c: dict, p: str) -> None:
        algo = self.string(self.key(c, "algo", p), f"{p}.algo")
        if algo not in hashes.ALGORITHMS:
            self.fail(f"{p}.algo", f"unknown hash algorithm '{algo}'")
        for i, inp in enumerate(self.arr(self.key(c, "input", p), f"{p}.input")):
            self.calc_input(inp, f"{p}.input[{i}]")

    def calc_input(self, inp: Any, ip: str, only_fields: bool = False) -> None:
        self.obj(inp, ip)
        t = self.string(self.key(inp, "type", ip), f"{ip}.type")
        if t not in (("field",) if only_fields else CALCULATION_INPUTS):
            self.fail(f"{ip}.type", f"unsupported input type '{t}'")
        if t == "field":
            self.field(self.key(inp, "value", ip), f"{ip}.value", valid_ok=False)
        elif t == "hexstr":
            self.hexstr(self.key(inp, "value", ip), f"{ip}.value")
            self.integer(self.key(inp, "bitwidth", ip), f"{ip}.bitwidth", 1, _MAX_WIDTH)
        elif t == "header":
            self.header(self.key(inp, "value", ip), f"{ip}.value")

    # -- actions --------------------------------------------------------------------------
    def actions(self) -> None:
        self.action_ids: dict[int, dict] = {}
        self.action_names: dict[str, dict] = {}
        for i, a in enumerate(self.items("actions")):
            p = f"actions[{i}]"
            self.obj(a, p)
            name = self.string(self.key(a, "name", p), f"{p}.name")
            aid = self.integer(self.key(a, "id", p), f"{p}.id")
            if aid in self.action_ids:
                self.fail(f"{p}.id", f"duplicate id {aid}")
            self.action_ids[aid] = a
            self.action_names.setdefault(name, a)
            params = self.arr(a.get("runtime_data", []), f"{p}.runtime_data")
            for k, rd in enumerate(params):
                rp = f"{p}.runtime_data[{k}]"
                self.obj(rd, rp)
                self.string(self.key(rd, "name", rp), f"{rp}.name")
                self.integer(self.key(rd, "bitwidth", rp), f"{rp}.bitwidth", 0, _MAX_WIDTH)
            prims = self.arr(a.get("primitives", []), f"{p}.primitives")
            for k, prim in enumerate(prims):
                self.primitive(prim, f"{p}.primitives[{k}]", len(params), len(prims))

    def primitive(self, prim: Any, path: str, nparams: int = 0, nprims: int = 0) -> None:
        self.obj(prim, path)
        op = self.string(self.key(prim, "op", path), f"{path}.op")
        if op not in self.primitives:
            self.fail(f"{path}.op", f"unknown primitive '{op}'")
        params = self.arr(prim.get("parameters", []), f"{path}.parameters")
        if len(params) != self.primitives[op] and not (self.allow and op == "log_msg" and len(params) == 1):
            self.fail(f"{path}.parameters", f"primitive '{op}' takes {self.primitives[op]} parameter(s), "
                                            f"got {len(params)}")
        kinds = PARAMETER_KINDS.get(op, {})
        for k, param in enumerate(params):
            self.parameter(param, f"{path}.parameters[{k}]", nparams)
            if k in kinds and param["type"] not in kinds[k]:
                self.fail(f"{path}.parameters[{k}].type", f"primitive '{op}' needs {' or '.join(sorted(kinds[k]))} "
                                                          f"here, got '{param['type']}'")
        if op in ("_jump", "_jump_if_zero"):
            target = params[-1]
            if target.get("type") != "hexstr" or not 0 <= int(target["value"], 16) <= nprims:
                self.fail(f"{path}.parameters[{len(params) - 1}]", f"'{op}' jumps outside its action")

    def parameter(self, param: Any, path: str, nparams: int) -> None:
        self.obj(param, path)
        t = self.string(self.key(param, "type", path), f"{path}.type")
        if t not in PARAMETER_TYPES:
            self.fail(f"{path}.type", f"parameter type '{t}' not supported")
        v = self.key(param, "value", path)
        vp = f"{path}.value"
        if t == "hexstr":
            self.hexstr(v, vp)
        elif t in ("parameters_vector", "field_list"):
            for k, item in enumerate(self.arr(v, vp)):
                if t == "field_list" and (not isinstance(item, dict) or item.get("type") != "field"):
                    self.fail(f"{vp}[{k}]", "a field list holds fields only")
                self.parameter(item, f"{vp}[{k}]", nparams)
        elif t == "runtime_data":
            self.integer(v, vp, 0)
            if v >= nparams:
                self.fail(vp, f"runtime_data {v} but the action has {nparams} parameter(s)")
        elif t == "expression":
            self.typed_value(param, path)
        elif t == "string":
            self.string(v, vp)
        elif t == "register":
            self.expression(param, path)
        else:
            tables = {"calculation": (self.calcs, "calculation"), "meter_array": (self.meters, "meter array"),
                      "counter_array": (self.counters, "counter array"),
                      "register_array": (self.registers, "register array"), "extern": (self.externs, "extern"),
                      "header_union": (self.unions, "header union"),
                      "header_union_stack": (self.union_stacks, "header union stack"),
                      "header_stack": (self.stacks, "header stack"), "header": (self.headers, "header")}
            if t in tables:
                self.ref(*tables[t], v, vp)
            elif t == "field":
                self.field(v, vp)
            elif t == "stack_field":
                self.stack_field(v, vp)

    # -- parser, deparser -----------------------------------------------------------------
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
            elif self.allow and t in ("stack_field", "bool", "header", "local", "runtime_data"):
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

    # -- pipelines ------------------------------------------------------------------------
    def pipelines(self) -> None:
        pipes = self.named("pipelines")
        for required in ("ingress", "egress"):
            if required not in pipes:
                self.fail("pipelines", f"simple_switch needs an '{required}' pipeline")
        self.profiles: dict[str, dict] = {}
        self.tables: dict[str, tuple[dict, str]] = {}
        for n, pipe in pipes.items():
            p = self.path_of("pipelines", n)
            nodes: dict[str, str] = {}
            for group in ("tables", "conditionals", "action_calls"):
                seen: set[int] = set()
                for i, node in enumerate(self.arr(pipe.get(group, []), f"{p}.{group}")):
                    np_ = f"{p}.{group}[{i}]"
                    self.obj(node, np_)
                    name = self.string(self.key(node, "name", np_), f"{np_}.name")
                    nid = self.integer(self.key(node, "id", np_), f"{np_}.id")
                    if name in nodes or name in self.tables or nid in seen:
                        self.fail(np_, f"duplicate control node name or id ('{name}', {nid})")
                    seen.add(nid)
                    nodes[name] = np_
                    if group == "tables":
                        self.tables[name] = (node, np_)
            for i, prof in enumerate(self.arr(pipe.get("action_profiles", []), f"{p}.action_profiles")):
                pp = f"{p}.action_profiles[{i}]"
                self.obj(prof, pp)
                pname = self.string(self.key(prof, "name", pp), f"{pp}.name")
                self.integer(self.key(prof, "id", pp), f"{pp}.id")
                if pname in self.profiles:
                    self.fail(f"{pp}.name", f"duplicate action profile '{pname}'")
                self.profiles[pname] = prof
                if "max_size" in prof:
                    self.integer(prof["max_size"], f"{pp}.max_size", 0)
                if "selector" in prof:
                    self.selector(prof["selector"], f"{pp}.selector")
            next_node = self.next_node_checker(nodes)
            for t in pipe.get("tables", []):
                self.table(t, self.tables[t["name"]][1], next_node)
            for i, c in enumerate(pipe.get("conditionals", [])):
                cp = f"{p}.conditionals[{i}]"
                self.expression(self.key(c, "expression", cp), f"{cp}.expression")
                if "true_next" not in c and "false_next" not in c:
                    self.fail(cp, 'a conditional needs "true_next" or "false_next"')
                next_node(c.get("true_next"), f"{cp}.true_next")
                next_node(c.get("false_next"), f"{cp}.false_next")
            for i, ac in enumerate(pipe.get("action_calls", [])):
                ap = f"{p}.action_calls[{i}]"
                a = self.action(self.key(ac, "action_id", ap), f"{ap}.action_id")
                if a.get("runtime_data"):
                    self.fail(f"{ap}.action_id", f"action '{a['name']}' takes parameters: it cannot be called directly")
                next_node(ac.get("next_node"), f"{ap}.next_node")
            next_node(self.key(pipe, "init_table", p), f"{p}.init_table")
        for n, c in self.counters.items():
            if c.get("is_direct"):
                self.ref(self.tables, "table", self.key(c, "binding", self.path_of("counter_arrays", n)),
                         f"{self.path_of('counter_arrays', n)}.binding")
        for n, m in self.meters.items():
            if m.get("is_direct"):
                self.ref(self.tables, "table", self.key(m, "binding", self.path_of("meter_arrays", n)),
                         f"{self.path_of('meter_arrays', n)}.binding")

    def selector(self, sel: Any, sp: str) -> None:
        self.obj(sel, sp)
        algo = self.string(self.key(sel, "algo", sp), f"{sp}.algo")
        if algo not in hashes.ALGORITHMS:
            self.fail(f"{sp}.algo", f"unknown hash algorithm '{algo}'")
        for k, inp in enumerate(self.arr(self.key(sel, "input", sp), f"{sp}.input")):
            self.calc_input(inp, f"{sp}.input[{k}]", only_fields=True)

    def next_node_checker(self, nodes: dict[str, str]):
        def check(v: Any, path: str) -> None:
            if v is not None and self.string(v, path) not in nodes:
                self.fail(path, f"unknown control node '{v}'")
        return check

    def action(self, aid: Any, path: str) -> dict:
        if type(aid) is not int or aid not in self.action_ids:
            self.fail(path, f"unknown action id {aid!r:.40}")
        return self.action_ids[aid]

    def action_data(self, data: Any, action: dict, path: str) -> None:
        self.arr(data, path)
        want = len(action.get("runtime_data", []))
        if len(data) != want:
            self.fail(path, f"action '{action['name']}' takes {want} argument(s), got {len(data)}")
        for k, d in enumerate(data):
            self.hexstr(d, f"{path}[{k}]")

    def table(self, t: dict, tp: str, next_node) -> None:
        keys = self.arr(t.get("key", []), f"{tp}.key")
        lpm = 0
        for k, key in enumerate(keys):
            kp = f"{tp}.key[{k}]"
            self.obj(key, kp)
            mt = self.string(self.key(key, "match_type", kp), f"{kp}.match_type")
            if mt not in self.key_match_types:
                self.fail(f"{kp}.match_type", f"invalid match type '{mt}'")
            lpm += mt == "lpm"
            target = self.key(key, "target", kp)
            if mt == "valid":
                self.header(target, f"{kp}.target")
            else:
                self.field(target, f"{kp}.target")
            if key.get("mask") is not None:
                self.hexstr(key["mask"], f"{kp}.mask")
            if "name" in key:
                self.string(key["name"], f"{kp}.name")
        if lpm > 1:
            self.fail(f"{tp}.key", "a table has at most one lpm match field")
        if self.string(t.get("match_type"), f"{tp}.match_type") not in TABLE_MATCH_TYPES:
            self.fail(f"{tp}.match_type", f"invalid table match type '{t['match_type']}'")
        ttype = self.string(self.key(t, "type", tp), f"{tp}.type")
        if ttype not in TABLE_TYPES:
            self.fail(f"{tp}.type", f"invalid table type '{ttype}'")
        if "max_size" not in t and "entries" not in t:
            self.fail(tp, 'a table needs "max_size" or "entries"')
        if "max_size" in t:
            self.integer(t["max_size"], f"{tp}.max_size", 0)
        for flag in ("with_counters", "support_timeout"):
            if t.get(flag) is not None:
                self.boolean(t[flag], f"{tp}.{flag}")
        if ttype != "simple":
            if "action_profile" in t:
                prof = self.ref(self.profiles, "action profile", t["action_profile"], f"{tp}.action_profile")
                if ttype == "indirect_ws" and "selector" not in self.profiles[prof]:
                    self.fail(f"{tp}.action_profile", f"action profile '{prof}' has no selector")
            elif "act_prof_name" in t:  # the older format: the table declares its own profile
                prof = self.string(t["act_prof_name"], f"{tp}.act_prof_name")
                if prof in self.profiles:
                    self.fail(f"{tp}.act_prof_name", f"duplicate action profile '{prof}'")
                self.profiles[prof] = {"name": prof, "selector": t.get("selector")}
                if ttype == "indirect_ws":
                    self.selector(self.key(t, "selector", tp), f"{tp}.selector")
            else:
                self.fail(tp, 'an indirect table needs "action_profile" (or "act_prof_name", the older format)')
        if t.get("direct_meters") is not None:
            dm = self.ref(self.meters, "meter array", t["direct_meters"], f"{tp}.direct_meters")
            if not self.meters[dm].get("is_direct"):
                self.fail(f"{tp}.direct_meters", f"meter array '{dm}' is not direct")
        # actions: by id, or by name as older compilers list them
        if "action_ids" in t:
            acts = [self.action(aid, f"{tp}.action_ids[{k}]")
                    for k, aid in enumerate(self.arr(t["action_ids"], f"{tp}.action_ids"))]
        else:
            acts = []
            for k, name in enumerate(self.arr(self.key(t, "actions", tp), f"{tp}.actions")):
                if self.string(name, f"{tp}.actions[{k}]") not in self.action_names:
                    self.fail(f"{tp}.actions[{k}]", f"unknown action '{name}'")
                acts.append(self.action_names[name])
        nt = self.obj(self.key(t, "next_tables", tp), f"{tp}.next_tables")
        if "__HIT__" in nt or "__MISS__" in nt:
            if set(nt) != {"__HIT__", "__MISS__"}:
                self.fail(f"{tp}.next_tables", 'with "__HIT__" or "__MISS__", next_tables has exactly those two keys')
        else:
            names = {a["name"] for a in acts}
            if set(nt) != names:
                missing = sorted(names - set(nt)) or sorted(set(nt) - names)
                self.fail(f"{tp}.next_tables", f"needs exactly one key per action of the table (check '{missing[0]}')")
        for k, v in nt.items():
            next_node(v, f"{tp}.next_tables.{k}")
        if "base_default_next" in t:
            next_node(t["base_default_next"], f"{tp}.base_default_next")
        if "default_entry" in t:
            dp = f"{tp}.default_entry"
            de = self.obj(t["default_entry"], dp)
            a = self.action(self.key(de, "action_id", dp), f"{dp}.action_id")
            for flag in ("action_const", "action_entry_const"):
                if de.get(flag) is not None and self.boolean(de[flag], f"{dp}.{flag}") and \
                        flag == "action_const" and ttype != "simple":
                    self.fail(f"{dp}.action_const", "only a simple table may have a const default action")
            self.action_data(self.key(de, "action_data", dp), a, f"{dp}.action_data")
        if "entries" in t:
            if ttype != "simple":
                self.fail(f"{tp}.entries", "only a simple table may have entries")
            for k, ent in enumerate(self.arr(t["entries"], f"{tp}.entries")):
                self.entry(ent, keys, f"{tp}.entries[{k}]")

    def entry(self, ent: Any, keys: list, ep: str) -> None:
        self.obj(ent, ep)
        mk = self.arr(self.key(ent, "match_key", ep), f"{ep}.match_key", len(keys))
        for k, (m, ref) in enumerate(zip(mk, keys)):
            mp = f"{ep}.match_key[{k}]"
            self.obj(m, mp)
            mt = m.get("match_type")
            if mt != ref["match_type"]:
                self.fail(f"{mp}.match_type", f"expected '{ref['match_type']}', got {mt!r:.40}")
            if mt == "valid":
                self.boolean(self.key(m, "key", mp), f"{mp}.key") if type(m.get("key")) is bool else \
                    self.hexstr(self.key(m, "key", mp), f"{mp}.key")
            elif mt == "range":
                self.hexstr(self.key(m, "start", mp), f"{mp}.start")
                self.hexstr(self.key(m, "end", mp), f"{mp}.end")
            else:
                self.hexstr(self.key(m, "key", mp), f"{mp}.key")
                if mt == "lpm":
                    self.integer(self.key(m, "prefix_length", mp), f"{mp}.prefix_length", 0, _MAX_WIDTH)
                if mt == "ternary" or (mt == "optional" and m.get("mask") is not None):
                    self.hexstr(self.key(m, "mask", mp), f"{mp}.mask")
        ae = self.obj(self.key(ent, "action_entry", ep), f"{ep}.action_entry")
        a = self.action(self.key(ae, "action_id", f"{ep}.action_entry"), f"{ep}.action_entry.action_id")
        self.action_data(self.key(ae, "action_data", f"{ep}.action_entry"), a, f"{ep}.action_entry.action_data")
        if "priority" in ent:
            self.integer(ent["priority"], f"{ep}.priority")

    # -- checksums, field lists -----------------------------------------------------------
    def checksums(self) -> None:
        for n, c in self.named("checksums").items():
            p = self.path_of("checksums", n)
            self.field(self.key(c, "target", p), f"{p}.target", valid_ok=False)
            if c.get("type", "generic") != "generic":
                self.fail(f"{p}.type", f"checksum type {c.get('type')!r:.40} is not supported (only 'generic')")
            self.ref(self.calcs, "calculation", self.key(c, "calculation", p), f"{p}.calculation")
            for flag in ("verify", "update"):
                if c.get(flag) is not None:
                    self.boolean(c[flag], f"{p}.{flag}")
            self.expression(c.get("if_cond"), f"{p}.if_cond")

    def field_lists(self) -> None:
        for group in ("field_lists", "learn_lists"):
            for i, fl in enumerate(self.items(group)):
                p = f"{group}[{i}]"
                self.obj(fl, p)
                self.integer(self.key(fl, "id", p), f"{p}.id")
                for k, e in enumerate(self.arr(fl.get("elements", []), f"{p}.elements")):
                    self.obj(e, f"{p}.elements[{k}]")
                    if e.get("type") == "field":
                        self.field(self.key(e, "value", f"{p}.elements[{k}]"), f"{p}.elements[{k}].value",
                                   valid_ok=False)


def _kind(v: Any) -> str:
    if v is None:
        return "null"
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "an array",
            dict: "an object"}.get(type(v), type(v).__name__)
