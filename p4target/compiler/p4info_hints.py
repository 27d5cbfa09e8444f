"""What the back end knows about a program's control-plane API, handed to the P4Info builder."""
from __future__ import annotations

from typing import Any

from p4target.compiler import ast
from p4target.compiler.context import Context
from p4target.compiler.p4info import (PKG_INFO_KEYS, ControllerHeaderHint, DigestHint, NewTypeHint,
                                      P4InfoHints, TableHints, build_p4info)
from p4target.compiler.types import (Bits, Bool, HeaderT, NewType, P4Type, StructT, TupleT, bit_width,
                                     is_signed, new_type_name)
from p4target.errors import CompileError


def program_hints(ctx: Context, bmv2_json: dict) -> P4InfoHints:
    hints = P4InfoHints(hidden=set(ctx.hidden))
    for name, info in ctx.tables.items():
        hints.tables[name] = TableHints(
            annotations=list(info.annotations), action_scopes=dict(info.action_scopes),
            action_ref_annotations={k: list(v) for k, v in info.action_ref_annotations.items()},
            const_default_action=info.const_default_action, is_const_table=info.is_const_table,
            key_names=list(info.key_names), key_bitwidths=list(info.key_bitwidths),
            key_type_names=list(info.key_type_names), key_match_kinds=list(info.key_match_kinds),
            key_annotations=[list(a) for a in info.key_annotations],
            implementation=info.implementation, direct_counter=info.direct_counter,
            direct_meter=info.direct_meter, size=info.size)
    hints.action_annotations = {k: v for k, v in ctx.action_annotations.items() if v}
    hints.action_param_annotations = dict(ctx.action_param_annotations)
    hints.direct_actions = dict(ctx.direct_actions)
    hints.action_param_types = dict(ctx.action_param_types)
    hints.new_types = {name: _new_type_hint(ctx, nt) for name, nt in ctx.scope.new_types.items()
                       if isinstance(nt.underlying, (Bits, Bool))}
    hints.serializable_enums = {name: (bit_width(t.underlying), list(t.members.items()))
                                for name, t in ctx.serializable_enums.items()}
    hints.extern_annotations = dict(ctx.extern_annotations)
    hints.explicit_ids.update(ctx.explicit_ids)
    for name, inst in ctx.externs.items():
        if inst.kind in ("counter", "direct_counter"):
            unit = inst.args[1] if inst.kind == "counter" and len(inst.args) > 1 else (
                inst.args[0] if inst.args else "packets_and_bytes")
            hints.counter_units[name] = str(unit)
        elif inst.kind == "register" and inst.type_args:
            t = inst.type_args[0]
            hints.register_types[name] = (bit_width(t), is_signed(t))
            if new_type_name(t):
                hints.register_type_names[name] = new_type_name(t)
        explicit = _id_annotation(inst.decl.annotations)
        if explicit is not None:
            hints.explicit_ids[name] = explicit
    for t in ctx.scope.resolved.values():
        if isinstance(t, HeaderT):
            ann = ast.find_annotation(t.annotations, "controller_header")
            if ann is not None and ann.args and isinstance(ann.args[0], ast.StringLiteral):
                hints.controller_headers.append(ControllerHeaderHint(
                    name=t.name, controller_header=ann.args[0].value,
                    fields=[(f, bit_width(ft)) for f, ft in t.fields],
                    type_names=[new_type_name(ft) for _, ft in t.fields],
                    field_annotations=[ctx.annotations_text(t.field_annotations.get(f, ())) for f, _ in t.fields]))
    main = ctx.scope.instances.get("main")
    if main is not None:
        hints.pkg_info = package_info(main.annotations)
        hints.pkg_annotations = [a for a in ctx.annotations_text(main.annotations)
                                 if not a.startswith("@pkginfo")]
    for name, element in ctx.value_sets.items():
        hints.value_set_matches[name] = _value_set_matches(element)
    widths = _field_widths(bmv2_json)
    for ll in bmv2_json.get("learn_lists", []):
        t = ctx.scope.resolved.get(ll["name"])
        names = [f for f, _ in t.fields] if t is not None and hasattr(t, "fields") else []
        types = [new_type_name(ft) for _, ft in t.fields] if names else []
        fields = []
        for i, e in enumerate(ll["elements"]):
            ref = tuple(e["value"])
            fname = names[i] if i < len(names) else ref[1].split(".")[-1]
            fields.append((fname, widths.get(ref, 32)))
        hints.digests.append(DigestHint(name=ll["name"], type_name=ll["name"], fields=fields,
                                        type_names=types[:len(fields)]))
    return hints


def _new_type_hint(ctx: Context, nt: NewType) -> NewTypeHint:
    """P4Info's view of a ``type`` declaration (its underlying type or its translation)."""
    under = nt.underlying
    hint = NewTypeHint(bitwidth=bit_width(under), signed=is_signed(under), is_bool=isinstance(under, Bool),
                       annotations=ctx.annotations_text(nt.annotations))
    if nt.translation is not None:
        hint.uri, hint.sdn_bitwidth = nt.translation.uri, nt.translation.sdn_bitwidth
    return hint


def package_info(annotations: Any) -> dict[str, str]:
    """The P4Info ``pkg_info`` fields an ``@pkginfo(key="value", ...)`` annotation sets, as
    p4c reads it: string values only; keys other than PkgInfo's are ignored (p4c warns)."""
    out: dict[str, str] = {}
    for ann in annotations:
        if ann.name != "pkginfo":
            continue
        if ann.raw and not ann.args:
            raise CompileError.at(ann.loc, "@pkginfo takes a list of key = \"value\" pairs")
        for arg in ann.args:
            if not isinstance(arg, ast.NamedArgument):
                raise CompileError.at(ann.loc, "@pkginfo takes a list of key = \"value\" pairs")
            if arg.name not in PKG_INFO_KEYS:
                continue
            if not isinstance(arg.value, ast.StringLiteral):
                raise CompileError.at(arg.loc, f"value for '{arg.name}' key in @pkginfo annotation "
                                               "is not a string")
            if arg.name in out:
                raise CompileError.at(arg.loc, f"duplicate key '{arg.name}' in @pkginfo annotation")
            out[arg.name] = arg.value.value
    return out


def _value_set_matches(element: P4Type) -> list[tuple[str, int, str]]:
    """P4Info match fields of a value set: one unnamed exact field for bit<W>; one per
    struct field (kind from its ``@match`` annotation) for structs."""
    if not isinstance(element, StructT):
        widths = [bit_width(t) for t in element.elements] if isinstance(element, TupleT) else [bit_width(element)]
        return [("", w, "exact") for w in widths] if len(widths) == 1 else \
            [(f"f{i}", w, "exact") for i, w in enumerate(widths)]
    out = []
    for fname, ft in element.fields:
        kind = "exact"
        ann = ast.find_annotation(element.field_annotations.get(fname, ()), "match")
        if ann is not None and ann.args and isinstance(ann.args[0], ast.PathExpression):
            kind = ann.args[0].name
        out.append((fname, bit_width(ft), kind))
    return out


def _id_annotation(annotations: Any) -> Any:
    ann = ast.find_annotation(annotations, "id")
    if ann is not None and ann.args and isinstance(ann.args[0], ast.IntLiteral):
        return ann.args[0].value
    return None


def _field_widths(bmv2_json: dict) -> dict[tuple[str, str], int]:
    types = {t["name"]: t for t in bmv2_json.get("header_types", [])}
    out = {}
    for h in bmv2_json.get("headers", []):
        for f in types[h["header_type"]]["fields"]:
            out[(h["name"], f[0])] = f[1]
    return out


def build_program_p4info(ctx: Context, bmv2_json: dict) -> Any:
    """The P4Info of a lowered program."""
    return build_p4info(bmv2_json, program_hints(ctx, bmv2_json))
