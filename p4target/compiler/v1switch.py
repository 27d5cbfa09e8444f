"""The v1model package: `V1Switch(parser, verify, ingress, egress, compute, deparser) main;`
lowered to one BMv2 JSON document (parser, two pipelines, checksums, deparser)."""
from __future__ import annotations

from typing import Any

from p4target.compiler import ast, externs
from p4target.compiler.context import Context
from p4target.compiler.controls import PipelineLinker
from p4target.compiler.ir import IfItem, Item, Prims, SubBlock
from p4target.compiler.parsers import ParserLowering
from p4target.compiler.semantics import ProgramScope, fail
from p4target.compiler.statements import ControlLowering, StatementLowering
from p4target.compiler.types import BlockT, EnumT, ExternT, StructLike
from p4target.compiler.values import BlockInstance, ControlContext, HeaderValue, PacketValue, Value
from p4target.errors import UnsupportedError

BLOCKS = ("parser", "verify_checksum", "ingress", "egress", "compute_checksum", "deparser")


def lower_program(program: ast.Program, program_name: str) -> Context:
    """Lower a whole v1model program; the returned context holds the BMv2 document and the
    facts P4Info needs."""
    scope = ProgramScope(program)
    ctx = Context(scope, program_name)
    main = scope.instances.get("main")
    if main is None:
        raise fail(program, "the program has no 'main' package instance (V1Switch(...) main;)")
    pkg = main.type.base.name if isinstance(main.type, ast.SpecializedType) else getattr(main.type, "name", "")
    if pkg != "V1Switch":
        raise UnsupportedError.at(main.loc, f"package '{pkg}'", "only v1model's V1Switch is supported")
    if len(main.args) != 6:
        raise fail(main, f"V1Switch takes 6 blocks, got {len(main.args)}")
    blocks = [_block(scope, a) for a in main.args]
    parser_decl = blocks[0][0]
    if not isinstance(parser_decl, ast.ParserDecl):
        raise fail(main.args[0], "the first V1Switch argument must be a parser")
    params = parser_decl.params
    if len(params) != 4:
        raise fail(parser_decl, "the V1Switch parser takes (packet_in, out H, inout M, inout standard_metadata_t)")
    h_type = scope.resolve(params[1].type)
    m_type = scope.resolve(params[2].type)
    sm_type = scope.resolve(params[3].type)
    ctx.out.errors = [[name, code] for name, code in scope.errors.items()]
    for name, d in scope.type_decls.items():
        if isinstance(d, ast.EnumDecl) and d.underlying is None:
            t = scope.resolve_name(name, d)
            assert isinstance(t, EnumT)
            ctx.out.enums.append({"name": name, "entries": [[m, v] for m, v in t.members.items()]})
    hdr = ctx.storage.headers_param(h_type, main)
    meta = ctx.storage.metadata_param(m_type, main)
    assert isinstance(sm_type, StructLike)
    ctx.out.add_header_type("standard_metadata", sm_type.fields)
    ctx.out.add_header("standard_metadata", "standard_metadata", True)
    # @alias("intrinsic_metadata.mcast_grp"): simple_switch reads and writes the field under that
    # name (multicast, priority queues, queueing metadata, timestamps), as p4c writes them
    for fname, _ in sm_type.fields:
        alias = ast.find_annotation(sm_type.field_annotations.get(fname, ()), "alias")
        if alias is not None and alias.args and isinstance(alias.args[0], ast.StringLiteral):
            ctx.out.field_aliases.append([alias.args[0].value, ["standard_metadata", fname]])
    sm = HeaderValue("standard_metadata", sm_type, True)
    ctx.metadata = meta if not isinstance(meta, HeaderValue) else None
    for name, inst in scope.instances.items():
        if name == "main":
            continue
        t = scope.resolve(inst.type)
        if isinstance(t, ExternT):
            ctx.global_env.define(name, externs.instantiate(ctx, inst, name, t, lambda n: None))
    top = StatementLowering(ctx, ctx.global_env, ControlContext("", None))
    for name, inst in scope.instances.items():
        t = scope.resolve(inst.type) if name != "main" else None
        if isinstance(t, BlockT) and isinstance(t.decl, (ast.ControlDecl, ast.ParserDecl)):
            ctx.global_env.define(name, BlockInstance(t.decl, name, inst.args,
                                                      top.constructor_bindings(t.decl, inst.args, inst)))

    def bind(decl: Any, ctor_args: tuple) -> dict[str, Value]:
        out: dict[str, Value] = top.constructor_bindings(decl, ctor_args, decl)
        for p in decl.params:
            if isinstance(p.type, ast.TypeName) and p.type.name in ("packet_in", "packet_out"):
                out[p.name] = PacketValue(p.type.name)
                continue
            t = scope.resolve(p.type)
            if t is h_type:
                out[p.name] = hdr
            elif t is m_type:
                out[p.name] = meta
            elif t is sm_type:
                out[p.name] = sm
            else:
                raise fail(p, f"parameter '{p.name}' of '{decl.name}' has unexpected type {t}")
        return out

    (pdecl, pname, pargs), (vdecl, vname, vargs), (idecl, iname, iargs), (edecl, ename, eargs), \
        (cdecl, cname, cargs), (ddecl, dname, dargs) = blocks
    for (decl, _, _), role in zip(blocks[1:], BLOCKS[1:]):
        if not isinstance(decl, ast.ControlDecl):
            raise fail(decl, f"V1Switch's {role} block must be a control")
    ctx.out.parsers.append(ParserLowering(ctx, pdecl, pname, bind(pdecl, pargs)).build())
    _checksum_block(ControlLowering(ctx, vdecl, vname, bind(vdecl, vargs), "verify_checksum").apply_items(), vdecl)
    ingress = ControlLowering(ctx, idecl, iname, bind(idecl, iargs)).apply_items()
    ctx.out.pipelines.append(PipelineLinker(ctx, "ingress", 0).build(ingress))
    egress = ControlLowering(ctx, edecl, ename, bind(edecl, eargs)).apply_items()
    ctx.out.pipelines.append(PipelineLinker(ctx, "egress", 1).build(egress))
    _checksum_block(ControlLowering(ctx, cdecl, cname, bind(cdecl, cargs), "compute_checksum").apply_items(), cdecl)
    order = _deparser_order(ControlLowering(ctx, ddecl, dname, bind(ddecl, dargs), "deparser").apply_items(), ddecl)
    ctx.out.deparsers.append({"name": "deparser", "id": 0, "source_info": {}, "order": order,
                              "primitives": []})
    for m in ctx.out.meter_arrays:
        if m.get("is_direct"):
            m["result_target"] = ctx.direct_meter_targets.get(m["name"])
    _drop_unbound_direct_resources(ctx)
    return ctx


def _drop_unbound_direct_resources(ctx: Context) -> None:
    """A direct counter or meter of a table that is never applied belongs to no table: p4c
    leaves both out (BMv2 cannot load a direct resource without its table)."""
    for arrays in (ctx.out.counter_arrays, ctx.out.meter_arrays):
        kept = [a for a in arrays if not (a.get("is_direct") and a.get("binding") is None)]
        for i, a in enumerate(kept):
            a["id"] = i
        arrays[:] = kept


def _block(scope: ProgramScope, arg: ast.Expression) -> tuple[Any, str, tuple]:
    """(declaration, instance name, constructor arguments) of a V1Switch argument:
    ``MyIngress()`` or a top-level instance."""
    if isinstance(arg, ast.MethodCallExpression) and isinstance(arg.method, (ast.PathExpression, ast.TypeExpression)):
        name = arg.method.name if isinstance(arg.method, ast.PathExpression) else getattr(arg.method.type, "name", "")
        decl = scope.controls.get(name) or scope.parsers.get(name)
        if decl is None:
            raise fail(arg, f"unknown parser or control '{name}'")
        return decl, name, tuple(arg.args)
    if isinstance(arg, ast.PathExpression) and arg.name in scope.instances:
        inst = scope.instances[arg.name]
        tname = getattr(inst.type, "name", "")
        decl = scope.controls.get(tname) or scope.parsers.get(tname)
        if decl is None:
            raise fail(arg, f"'{arg.name}' is not a parser or control instance")
        return decl, arg.name, tuple(inst.args)
    raise fail(arg, "V1Switch arguments must be parser/control instances")


def _flatten(items: list[Item]) -> list[Item]:
    out: list[Item] = []
    for it in items:
        if isinstance(it, SubBlock):
            out += _flatten(it.items)
        else:
            out.append(it)
    return out


def _checksum_block(items: list[Item], decl: Any) -> None:
    for it in _flatten(items):
        if isinstance(it, Prims) and not it.primitives:
            continue
        if isinstance(it, IfItem):
            raise UnsupportedError.at(decl.loc, "conditions in checksum controls",
                                      "use the condition argument of verify_checksum/update_checksum")
        raise UnsupportedError.at(decl.loc, "statements other than verify_checksum/update_checksum "
                                            "in checksum controls")


def _deparser_order(items: list[Item], decl: Any) -> list[str]:
    order: list[str] = []
    for it in _flatten(items):
        if not isinstance(it, Prims):
            raise UnsupportedError.at(decl.loc, "control flow in the deparser")
        for p in it.primitives:
            if p["op"] != "__emit":
                raise UnsupportedError.at(decl.loc, f"'{p['op']}' in the deparser")
            order += [h for h in p["parameters"] if h not in order]
    return order
