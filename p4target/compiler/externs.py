"""v1model externs: instances become BMv2 arrays, calls become BMv2 primitives."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from p4target.compiler import ast
from p4target.compiler.bmv2_json import hexstr
from p4target.compiler.context import Context
from p4target.compiler.expressions import to_data
from p4target.compiler.ir import Prims
from p4target.compiler.semantics import fail
from p4target.compiler.types import Bits, Bool, EnumT, ExternT, P4Type, StructLike, VarbitT, bit_width
from p4target.compiler.values import (ExprValue, ExternInstance, FieldValue, HeaderValue,
                                      StackValue, StructValue, UnionValue, Value)
from p4target.errors import UnsupportedError

if TYPE_CHECKING:  # annotations only: statements imports this module
    from p4target.compiler.statements import StatementLowering

HASH_ALGORITHMS = {"crc32": "crc32", "crc16": "crc16", "random": "random", "identity": "identity",
                   "csum16": "csum16", "xor16": "xor16", "crc32_custom": "crc32_custom",
                   "crc16_custom": "crc16_custom"}
SIMPLE_EXTERNS = ("register", "counter", "meter", "direct_counter", "direct_meter",
                  "action_profile", "action_selector")


def instantiate(ctx: Context, d: ast.InstantiationDecl, name: str, t: ExternT,
                lookup: Any) -> ExternInstance:
    """Create the BMv2 object of an extern instance declared in a control (or globally)."""
    kind = t.name
    args = [_arg_value(ctx, a, lookup) for a in d.args]
    inst = ExternInstance(kind, name, d, list(t.type_args), args)
    out = ctx.out
    ann = ctx.annotations_text(d.annotations)
    if ann:
        ctx.extern_annotations[name] = ann
    if kind == "register":
        if t.type_args and not t.type_args[0].is_scalar():
            raise UnsupportedError.at(d.loc, f"register of {t.type_args[0]} values",
                                      "BMv2 registers hold bit<W> or int<W> values")
        width = bit_width(t.type_args[0]) if t.type_args else 32
        out.register_arrays.append({"name": name, "id": len(out.register_arrays),
                                    "size": int(args[0]), "bitwidth": width})
    elif kind == "counter":
        out.counter_arrays.append({"name": name, "id": len(out.counter_arrays), "is_direct": False,
                                   "size": int(args[0])})
    elif kind == "direct_counter":
        out.counter_arrays.append({"name": name, "id": len(out.counter_arrays), "is_direct": True,
                                   "binding": None})
    elif kind == "meter":
        out.meter_arrays.append({"name": name, "id": len(out.meter_arrays), "is_direct": False,
                                 "size": int(args[0]), "rate_count": 2,
                                 "type": "bytes" if args[1] == "bytes" else "packets"})
    elif kind == "direct_meter":
        out.meter_arrays.append({"name": name, "id": len(out.meter_arrays), "is_direct": True,
                                 "rate_count": 2, "type": "bytes" if args[0] == "bytes" else "packets",
                                 "size": 0, "binding": None, "result_target": None})
    elif kind in ("action_profile", "action_selector"):
        pass  # emitted with the first table that uses it
    else:
        raise UnsupportedError.at(d.loc, f"extern '{kind}'")
    ctx.externs[name] = inst
    return inst


def _arg_value(ctx: Context, a: ast.Expression, lookup: Any) -> Any:
    if isinstance(a, ast.MemberExpression) and isinstance(a.expr, ast.PathExpression):
        decl = ctx.scope.type_decls.get(a.expr.name)
        if isinstance(decl, ast.EnumDecl) and decl.underlying is None:
            return a.member
    return ctx.scope.const_eval(a, lookup)


def _ref(kind: str, name: str) -> dict:
    return {"type": kind, "value": name}


def _out_field(sl: "StatementLowering", e: ast.Expression, t: P4Type | None = None) -> dict:
    """The field an extern writes; for the don't-care ``_``, a fresh one of type ``t``."""
    if isinstance(e, ast.DontCareExpression):
        if t is None:
            raise fail(e, "the type of '_' cannot be inferred here; pass a variable")
        v = sl.ctx.storage.variable("dontcare", t, e)
        assert isinstance(v, FieldValue)
        return v.json()
    v = sl.ex.lvalue(e)
    if isinstance(v, FieldValue):
        return v.json()
    if isinstance(v, ExprValue):
        return v.json
    raise fail(e, "this argument must be a scalar field or variable")


def method_call(sl: "StatementLowering", inst: ExternInstance, method: str,
                c: ast.MethodCallExpression) -> list[dict]:
    """Primitives of ``inst.method(args)``."""
    a = c.args
    kind = inst.kind
    ex = sl.ex
    if kind == "register" and method == "read":
        return [{"op": "register_read", "parameters": [
            _out_field(sl, a[0], inst.type_args[0] if inst.type_args else Bits(32)),
            _ref("register_array", inst.name), ex.lower(a[1], Bits(32))[0]]}]
    if kind == "register" and method == "write":
        width = bit_width(inst.type_args[0]) if inst.type_args else 32
        value, vt = ex.lower(a[1], inst.type_args[0] if inst.type_args else Bits(width))
        return [{"op": "register_write", "parameters": [
            _ref("register_array", inst.name), ex.lower(a[0], Bits(32))[0], to_data(value, vt)]}]
    if kind == "counter" and method == "count":
        return [{"op": "count", "parameters": [_ref("counter_array", inst.name), ex.lower(a[0], Bits(32))[0]]}]
    if kind == "direct_counter" and method == "count":
        return []
    if kind == "meter" and method == "execute_meter":
        return [{"op": "execute_meter", "parameters": [
            _ref("meter_array", inst.name), ex.lower(a[0], Bits(32))[0], _out_field(sl, a[1])]}]
    if kind == "direct_meter" and method == "read":
        sl.ctx.direct_meter_targets[inst.name] = _out_field(sl, a[0])["value"]
        return []
    raise fail(c, f"'{kind}' has no method '{method}' usable here")


def _field_list(sl: "StatementLowering", e: ast.Expression) -> list[dict]:
    """BMv2 calculation/learn inputs of a list, struct or single expression."""
    if isinstance(e, (ast.ListExpression, ast.StructExpression)):
        elems = e.elements if isinstance(e, ast.ListExpression) else tuple(f.value for f in e.fields)
        out: list[dict] = []
        for x in elems:
            out += _field_list(sl, x)
        return out
    v = sl.ex.value_of(e)
    return _value_fields(sl, v, e)


def _hash_inputs(sl: "StatementLowering", e: ast.Expression) -> tuple[list[dict], list[dict]]:
    """Calculation inputs of hash()'s data and the assignments filling them. Like p4c, every
    non-constant element is first copied into a scalar: the hash then sees the value even
    when its header is invalid (BMv2 leaves out the fields of invalid headers)."""
    def flat(x: ast.Expression) -> list[ast.Expression]:
        if isinstance(x, (ast.ListExpression, ast.StructExpression)):
            elems = x.elements if isinstance(x, ast.ListExpression) else tuple(f.value for f in x.fields)
            return [y for el in elems for y in flat(el)]
        return [x]

    inputs: list[dict] = []
    copies: list[dict] = []
    for x in flat(e):
        v = sl.ex.value_of(x)
        if isinstance(v, (HeaderValue, StructValue)):  # whole aggregates: field by field
            items = [(j, _width_of(sl, v, j)) for j in _value_fields(sl, v, x)]
        elif isinstance(v, FieldValue):
            if isinstance(v.type, VarbitT):  # hashed at its per-packet size, so not copied
                inputs.append(v.json())
                continue
            items = [(v.json(), bit_width(v.type))]
        else:
            j = _value_fields(sl, v, x)[0]
            if j.get("type") == "hexstr":
                inputs.append(j)
                continue
            items = [(j["value"], j.get("bitwidth", 32))]
        for src, width in items:
            tmp = sl.ctx.out.add_scalar("hash_tmp", Bits(width))
            dst = {"type": "field", "value": ["scalars", tmp]}
            copies.append({"op": "assign", "parameters": [dst, src]})
            inputs.append(dst)
    return inputs, copies


def _width_of(sl: "StatementLowering", v: Value, j: dict) -> int:
    """Bit width of field ``j`` of the header or struct value ``v``."""
    def find(val: Value) -> int | None:
        if isinstance(val, FieldValue):
            return bit_width(val.type) if val.json() == j else None
        if isinstance(val, HeaderValue):
            for f, t in val.type.fields:
                if [val.name, f] == j["value"]:
                    return bit_width(t)
            return None
        if isinstance(val, StructValue):
            for m in val.members.values():
                w = find(m)
                if w is not None:
                    return w
        return None
    w = find(v)
    if w is None:
        raise fail(None, f"internal: no width for hash input {j}")
    return w


def _value_fields(sl: "StatementLowering", v: Value, node: Any) -> list[dict]:
    if isinstance(v, FieldValue):
        return [v.json()]
    if isinstance(v, HeaderValue):
        return [{"type": "field", "value": [v.name, f]} for f, _ in v.type.fields]
    if isinstance(v, StructValue):
        out: list[dict] = []
        for m in v.members.values():
            out += _value_fields(sl, m, node)
        return out
    j, t = sl.ex.rvalue(v, node)
    if j.get("type") == "hexstr":
        return [dict(j, bitwidth=bit_width(t) if isinstance(t, (Bits, Bool, EnumT)) else 32)]
    return [{"type": "expression", "value": j, "bitwidth": bit_width(t)}]


def function_call(sl: "StatementLowering", name: str, c: ast.MethodCallExpression) -> list[dict]:
    """Primitives of a v1model/core extern function call."""
    ctx = sl.ctx
    ex = sl.ex
    a = c.args
    if name == "mark_to_drop":
        return [{"op": "mark_to_drop", "parameters": [{"type": "header", "value": "standard_metadata"}]}]
    if name == "random":
        dst = _out_field(sl, a[0])
        t = sl.ex.lvalue(a[0]).type
        return [{"op": "modify_field_rng_uniform", "parameters": [dst, ex.lower(a[1], t)[0], ex.lower(a[2], t)[0]]}]
    if name == "hash":
        dst_v = sl.ex.lvalue(a[0])
        algo = _enum_member(a[1], "HashAlgorithm")
        if algo not in HASH_ALGORITHMS:
            raise fail(a[1], f"unknown hash algorithm '{algo}'")
        inputs, copies = _hash_inputs(sl, a[3])
        calc = ctx.out.add_calculation(HASH_ALGORITHMS[algo], inputs)
        base, _ = ex.lower(a[2], dst_v.type)
        maximum, _ = ex.lower(a[4], Bits(64))
        return copies + [{"op": "modify_field_with_hash_based_offset", "parameters": [
            _out_field(sl, a[0]), base, {"type": "calculation", "value": calc}, maximum]}]
    if name == "digest":
        receiver, _ = ex.lower(a[0], Bits(32))
        fields, prims = _materialize(sl, a[1])
        type_name = _struct_type_name(sl, a[1])
        lid = _learn_list(ctx, type_name, fields)
        return prims + [{"op": "generate_digest", "parameters": [receiver, hexstr(lid)]}]
    if name in ("clone", "clone_preserving_field_list", "clone3"):
        kind = _enum_member(a[0], "CloneType")
        session, _ = ex.lower(a[1], Bits(32))
        if name == "clone_preserving_field_list":
            fl = _ensure_field_list(ctx, int(ctx.scope.const_eval(a[2], ex._const_lookup)), c)
        elif name == "clone3":
            fl = _anonymous_field_list(sl, a[2])
        else:
            # as p4c: an empty field list of its own (simple_switch looks the id up on every
            # clone; an id no field list has crashes it)
            fl = _new_field_list(ctx, "fl", [])
        op = "clone_ingress_pkt_to_egress" if kind == "I2E" else "clone_egress_pkt_to_egress"
        return [{"op": op, "parameters": [session, hexstr(fl)]}]
    if name in ("resubmit_preserving_field_list", "recirculate_preserving_field_list"):
        fl = _ensure_field_list(ctx, int(ctx.scope.const_eval(a[0], ex._const_lookup)), c)
        # simple_switch's primitives are "resubmit"/"recirculate" taking the field list id
        return [{"op": name.removesuffix("_preserving_field_list"), "parameters": [hexstr(fl)]}]
    if name in ("resubmit", "recirculate"):
        fl = _anonymous_field_list(sl, a[0]) if a else _new_field_list(ctx, "fl", [])
        return [{"op": name, "parameters": [hexstr(fl)]}]
    if name == "truncate":
        return [{"op": "truncate", "parameters": [ex.lower(a[0], Bits(32))[0]]}]
    if name in ("assert", "assume"):
        return [{"op": name, "parameters": [ex.lower_bool(a[0])]}]
    if name == "log_msg":
        if not isinstance(a[0], ast.StringLiteral):
            raise fail(a[0], "log_msg needs a string literal")
        fmt = a[0].value
        if len(a) > 1:
            elems = a[1].elements if isinstance(a[1], ast.ListExpression) else (a[1],)
            pieces = fmt.split("{}")
            vals: list[dict] = []
            out = pieces[0]
            for i, x in enumerate(elems):
                piece, xs = _log_msg_argument(sl, x)
                vals += xs
                if i + 1 < len(pieces):  # the i-th "{}" becomes the argument's piece
                    out += piece + pieces[i + 1]
            for rest in pieces[len(elems) + 1:]:  # placeholders without an argument stay
                out += "{}" + rest
            return [{"op": "log_msg", "parameters": [{"type": "string", "value": out},
                                                     {"type": "parameters_vector", "value": vals}]}]
        # BMv2's log_msg always takes the format and a (here empty) vector of values
        return [{"op": "log_msg", "parameters": [{"type": "string", "value": fmt},
                                                 {"type": "parameters_vector", "value": []}]}]
    if name == "verify":
        if not sl.in_parser:
            raise fail(c, "verify() is only allowed in a parser")
        return [{"op": "verify", "parameters": [ex.lower_bool(a[0]), ex.lower(a[1])[0]]}]
    if name in ("verify_checksum", "update_checksum", "verify_checksum_with_payload",
                "update_checksum_with_payload"):
        if sl.block_kind not in ("verify_checksum", "compute_checksum"):
            raise fail(c, f"{name} belongs in the checksum controls of V1Switch")
        cond = ex.lower_bool(a[0])
        algo = _enum_member(a[3], "HashAlgorithm")
        inputs = _field_list(sl, a[1])
        if name.endswith("_with_payload"):
            inputs = inputs + [{"type": "payload", "value": None}]
        calc = ctx.out.add_calculation(HASH_ALGORITHMS.get(algo, algo), inputs)
        target = _out_field(sl, a[2])
        verify = name.startswith("verify")
        ctx.out.checksums.append({"name": f"cksum_{len(ctx.out.checksums)}" if ctx.out.checksums else "cksum",
                                  "id": len(ctx.out.checksums), "target": target["value"],
                                  "type": "generic", "calculation": calc, "verify": verify,
                                  "update": not verify, "if_cond": cond})
        return []
    if name == "static_assert":
        if not ctx.scope.const_eval(a[0], ex._const_lookup):
            raise fail(c, "static_assert failed" + (f": {a[1].value}" if len(a) > 1 else ""))
        return []
    raise UnsupportedError.at(c.loc, f"extern function '{name}'")


def _enum_member(e: ast.Expression, enum: str) -> str:
    if isinstance(e, ast.MemberExpression):
        return e.member
    raise fail(e, f"expected a {enum} member")


def _struct_type_name(sl: "StatementLowering", e: ast.Expression) -> str:
    if isinstance(e, ast.StructExpression) and e.type is not None:
        return getattr(e.type, "name", "digest")
    if isinstance(e, (ast.PathExpression, ast.MemberExpression)):
        v = sl.ex.value_of(e)
        if isinstance(v, (StructValue, HeaderValue)):
            return v.type.name
    return "digest"


def _materialize(sl: "StatementLowering", e: ast.Expression) -> tuple[list[dict], list[dict]]:
    """Fields holding a digest's values; non-field values are first copied into scalars."""
    fields: list[dict] = []
    prims: list[dict] = []
    for j in _field_list(sl, e):
        if j.get("type") == "field":
            fields.append(j)
            continue
        width = j.get("bitwidth", 32)
        name = sl.ctx.out.add_scalar("digest_tmp", Bits(width))
        dst = {"type": "field", "value": ["scalars", name]}
        src = j["value"] if j.get("type") == "expression" else {k: v for k, v in j.items() if k != "bitwidth"}
        prims.append({"op": "assign", "parameters": [dst, src]})
        fields.append(dst)
    return fields, prims


def _learn_list(ctx: Context, type_name: str, fields: list[dict]) -> int:
    for ll in ctx.out.learn_lists:
        if ll["name"] == type_name:
            return ll["id"]
    lid = len(ctx.out.learn_lists) + 1
    ctx.out.learn_lists.append({"id": lid, "name": type_name, "source_info": {},
                                "elements": fields})
    return lid


def _new_field_list(ctx: Context, name: str, elements: list[dict]) -> int:
    """A new field list; its id (from 1, as p4c numbers them: simple_switch takes a resubmit or
    recirculate field list id of 0 for "none requested")."""
    fid = max([fl["id"] for fl in ctx.out.field_lists] + [0]) + 1
    names = {fl["name"] for fl in ctx.out.field_lists}
    unique, n = name, 0
    while unique in names:
        unique, n = f"{name}_{n}", n + 1
    ctx.out.field_lists.append({"id": fid, "name": unique, "elements": elements})
    return fid


def _ensure_field_list(ctx: Context, index: int, node: Any) -> int:
    """The id of field list ``index`` (p4c's `field_list<index>`): the user metadata fields
    annotated ``@field_list(index)``."""
    for fl in ctx.out.field_lists:
        if fl["name"] == f"field_list{index}":
            return fl["id"]
    elements: list[dict] = []

    def walk(v: Value, t: Any) -> None:
        if not isinstance(v, StructValue):
            return
        for fname, member in v.members.items():
            anns = v.type.field_annotations.get(fname, ())
            for ann in anns:
                if ann.name == "field_list" and any(
                        ctx.scope.const_eval(x, lambda n: None) == index for x in ann.args):
                    if isinstance(member, FieldValue):
                        elements.append(member.json())
            walk(member, None)
    if ctx.metadata is not None:
        walk(ctx.metadata, None)
    return _new_field_list(ctx, f"field_list{index}", elements)


def _log_msg_argument(sl: "StatementLowering", e: ast.Expression) -> tuple[str, list[dict]]:
    """(format piece, values) of one log_msg argument: a header or struct prints as
    ``(field:{},...)`` over its fields, as p4c flattens it."""
    v = sl.ex.value_of(e) if isinstance(e, (ast.PathExpression, ast.MemberExpression)) else None

    def flat(v: Value) -> tuple[str, list[dict]]:
        if isinstance(v, (HeaderValue, StructValue)):
            parts, vals = [], []
            members = v.members if isinstance(v, StructValue) else {f: v.field(f) for f, _ in v.type.fields}
            for fname, m in members.items():
                piece, xs = flat(m)
                parts.append(f"{fname}:{piece}")
                vals += xs
            return "(" + ",".join(parts) + ")", vals
        j, t = sl.ex.rvalue(v, e)
        return "{}", [to_data(j, t)]

    if isinstance(v, (HeaderValue, StructValue)):
        return flat(v)
    j, t = sl.ex.lower(e)
    return "{}", [to_data(j, t)]


def _anonymous_field_list(sl: "StatementLowering", e: ast.Expression) -> int:
    fields = [j for j in _field_list(sl, e) if j.get("type") == "field"]
    return _new_field_list(sl.ctx, "fl", fields)


def packet_call(sl: "StatementLowering", c: ast.MethodCallExpression) -> list:
    """``packet_in``/``packet_out`` methods: handled by the parser and deparser lowering."""
    m = c.method
    assert isinstance(m, ast.MemberExpression)
    if m.member == "extract":
        if not sl.in_parser:
            raise fail(c, "extract() is only allowed in a parser")
        if len(c.args) not in (1, 2):
            raise fail(c, f"extract() takes a header and an optional size, got {len(c.args)} arguments")
        arg = c.args[0]
        union_next = isinstance(arg, ast.MemberExpression) and isinstance(arg.expr, ast.MemberExpression) \
            and arg.expr.member == "next"
        if union_next:  # stack_of_unions.next.member
            stack = sl.ex.value_of(arg.expr.expr)
            if not isinstance(stack, StackValue) or stack.unions is None:
                raise fail(arg, "'.next.<member>' needs a stack of header unions")
            htype = stack.type.element.field_type(arg.member)
            if htype is None:
                raise fail(arg, f"union '{stack.type.element.name}' has no member '{arg.member}'")
            target = {"type": "union_stack", "value": [stack.name, arg.member]}
        elif isinstance(arg, ast.MemberExpression) and arg.member == "next":
            stack = sl.ex.value_of(arg.expr)
            if not isinstance(stack, StackValue):
                raise fail(arg, "'.next' needs a header stack")
            if stack.unions is not None:
                raise fail(arg, "extract into a stack of header unions names the member: '.next.<member>'")
            target, htype = {"type": "stack", "value": stack.name}, stack.type.element
        else:
            if isinstance(arg, ast.DontCareExpression):  # extract<H>(_): the bytes go to a scratch header
                if not c.type_args:
                    raise fail(arg, "the type of '_' cannot be inferred here; write extract<H>(_)")
                v = sl.ctx.storage.variable("dontcare", sl.ctx.scope.resolve(c.type_args[0]), arg)
            else:
                v = sl.ex.value_of(arg)
            if not isinstance(v, HeaderValue) or v.metadata:
                raise fail(arg, "extract() needs a header")
            target, htype = {"type": "regular", "value": v.name}, v.type
        has_varbit = any(isinstance(ft, VarbitT) for _, ft in htype.fields)
        if len(c.args) == 1:
            if has_varbit:
                raise fail(c, f"extract() of header type '{htype.name}' with a varbit field "
                              "needs the varbit size in bits as second argument")
            return [Prims([{"op": "__extract", "parameters": [target]}])]
        if not has_varbit:
            raise fail(c, f"two-argument extract() needs a header with a varbit field; "
                          f"'{htype.name}' has none")
        size = sl.ex.lower(c.args[1], Bits(32))[0]
        return [Prims([{"op": "__extract_VL", "parameters": [target, size]}])]
    if m.member == "lookahead" and sl.in_parser:
        # the value is unused, but the check is not: too few bytes left is PacketTooShort
        # (p4c keeps it, p4c issue 1768); the bits go to a scratch field
        width = lookahead_width(sl.ctx.scope.resolve(c.type_args[0]), c) if c.type_args else 0
        if width == 0:
            return []
        scratch = sl.ctx.out.add_scalar("lookahead_tmp", Bits(width))
        return [Prims([{"op": "assign", "parameters": [
            {"type": "field", "value": ["scalars", scratch]},
            {"type": "lookahead", "value": [0, width]}]}])]
    if m.member == "advance":
        return [Prims([{"op": "__advance", "parameters": [sl.ex.lower(c.args[0], Bits(32))[0]]}])]
    if m.member == "emit":
        if sl.block_kind != "deparser":
            raise fail(c, "emit() is only allowed in the deparser")
        return [Prims([{"op": "__emit", "parameters": _emit_order(sl.ex.value_of(c.args[0]), c)}])]
    raise UnsupportedError.at(c.loc, f"packet method '{m.member}' here")


def _emit_order(v: Value, node: Any) -> list[str]:
    if isinstance(v, HeaderValue):
        return [v.name]
    if isinstance(v, StackValue):
        if v.unions is not None:
            return [h.name for u in v.unions for h in u.members.values()]
        return list(v.elements)
    if isinstance(v, UnionValue):
        return [h.name for h in v.members.values()]
    if isinstance(v, StructValue):
        out: list[str] = []
        for m in v.members.values():
            out += _emit_order(m, node)
        return out
    raise fail(node, "emit() needs a header, stack, union or struct of those")


def lookahead_width(t: Any, node: Any) -> int:
    """Bits a ``lookahead<T>()`` peeks at: T's width, a header's or struct's summed up."""
    if isinstance(t, StructLike):
        return sum(lookahead_width(ft, node) for _, ft in t.fields)
    if isinstance(t, VarbitT):
        raise fail(node, "lookahead of a type with a varbit field")
    return bit_width(t)
