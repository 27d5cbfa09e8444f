"""Tables and the actions they run, lowered to BMv2 JSON (keys, const entries, defaults,
action profiles and selectors, direct counters and meters)."""
from __future__ import annotations

from typing import Any

from p4target.compiler import ast, externs
from p4target.compiler.action_body import action_primitives, predicate
from p4target.compiler.bmv2_json import data_hex
from p4target.compiler.call_order import CallHoister
from p4target.compiler.context import Context, TableInfo
from p4target.compiler.expressions import Env, ExpressionLowering, to_data
from p4target.compiler.statements import StatementLowering, copied_call
from p4target.compiler.semantics import fail
from p4target.compiler.types import Bits, Bool, EnumT, bit_width, new_type_name
from p4target.compiler.values import (ActionSymbol, ExternInstance, FieldValue,
                                      HeaderValue, RuntimeDataValue, TableSymbol)
from p4target.errors import UnsupportedError

DEFAULT_TABLE_SIZE = 1024


def source_text(e: ast.Expression) -> str:
    """The P4 text of a key expression, as P4Info names match fields."""
    if isinstance(e, ast.PathExpression):
        return e.name
    if isinstance(e, ast.MemberExpression):
        return f"{source_text(e.expr)}.{e.member}"
    if isinstance(e, ast.IndexExpression):
        return f"{source_text(e.expr)}[{source_text(e.index)}]"
    if isinstance(e, ast.IntLiteral):
        return e.text or str(e.value)
    if isinstance(e, ast.SliceExpression):
        return f"{source_text(e.expr)}[{source_text(e.high)}:{source_text(e.low)}]"
    if isinstance(e, ast.MethodCallExpression):
        if isinstance(e.method, ast.MemberExpression) and e.method.member == "isValid" and not e.args:
            return f"{source_text(e.method.expr)}.$valid$"  # p4c's name for a validity key
        args = (a.value if isinstance(a, ast.NamedArgument) else a for a in e.args)
        return f"{source_text(e.method)}({', '.join(source_text(a) for a in args)})"
    if isinstance(e, ast.CastExpression):
        return f"({_type_text(e.type)}){source_text(e.expr)}"
    if isinstance(e, ast.BinaryExpression):
        return f"{source_text(e.left)} {e.op} {source_text(e.right)}"
    return type(e).__name__


def _type_text(t: ast.Type) -> str:
    if isinstance(t, ast.BitType):
        return f"{'int' if t.signed else 'bit'}<{source_text(t.width)}>"
    if isinstance(t, ast.TypeName):
        return t.name
    return "bool" if isinstance(t, ast.BoolType) else "type"


class ActionLowering:
    """Lowers actions referenced by tables into BMv2 actions (once per binding)."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.cache: dict[tuple, tuple[int, str, list]] = {}

    def lower(self, sym: ActionSymbol, env: Env, bound_args: tuple, node: Any) -> tuple[int, str, list]:
        """(BMv2 action id, name, [(param, type)] of action data)."""
        key = (id(sym.decl), sym.name, tuple(source_text(a) for a in bound_args))
        if key in self.cache:
            return self.cache[key]
        aenv = env.child()
        data_params = []
        params = list(sym.decl.params)
        if len(bound_args) > len(params):
            raise fail(node, f"too many arguments for action '{sym.decl.name}'")
        bound = list(zip(params, bound_args))
        for p in params[len(bound_args):]:
            if p.direction is not None:
                raise fail(node, f"action '{sym.decl.name}': parameter '{p.name}' needs an argument")
            t = self.ctx.scope.resolve(p.type)
            aenv.define(p.name, RuntimeDataValue(len(data_params), t))
            data_params.append((_control_plane_name(p), t))
            _note_serializable_enum(self.ctx, t)
        outer = StatementLowering(self.ctx, env, sym.control, block_kind="action")
        copy_in, copy_out = outer.bind_parameters(bound, aenv, node, sym.decl.name)
        sl = StatementLowering(self.ctx, aenv, sym.control, block_kind="action")
        items = [copied_call(copy_in, sl.block(sym.decl.body.statements), copy_out)]
        primitives = action_primitives(self.ctx, items, sym.decl)
        # one P4 action bound to different arguments (e.g. a global action used by ingress and
        # egress) gives several BMv2 actions of the same name, as in p4c's JSON
        name = self.ctx.reserve_action_name(sym.name)
        aid = self.ctx.out.add_action(name, [(n, bit_width(t)) for n, t in data_params], primitives)
        self.ctx.action_annotations[name] = self.ctx.annotations_text(sym.decl.annotations)
        if ast.find_annotation(sym.decl.annotations, "hidden") is not None:
            self.ctx.hidden.add(name)
        self.ctx.action_param_types[name] = [new_type_name(t) for _, t in data_params]
        self.ctx.action_param_annotations[name] = [self.ctx.annotations_text(p.annotations)
                                                   for p in params[len(bound_args):]]
        _note_explicit_id(self.ctx, name, sym.decl.annotations)
        self.cache[key] = (aid, name, data_params)
        return self.cache[key]


def _control_plane_name(p: ast.Parameter) -> str:
    """An action parameter's name for the control plane: its ``@name`` if given."""
    ann = ast.find_annotation(p.annotations, "name")
    if ann is not None and ann.args and isinstance(ann.args[0], ast.StringLiteral):
        return ann.args[0].value
    return p.name


def _note_explicit_id(ctx: Any, name: str, annotations: Any) -> None:
    """``@id(N)`` on a table or action fixes its P4Info id."""
    ann = ast.find_annotation(annotations, "id")
    if ann is not None and ann.args and isinstance(ann.args[0], ast.IntLiteral):
        ctx.explicit_ids[name] = ann.args[0].value


def _note_serializable_enum(ctx: Any, t: Any) -> None:
    """p4c's P4Info describes the serializable enums of keys and action data in type_info."""
    if isinstance(t, EnumT) and t.underlying is not None:
        ctx.serializable_enums[t.name] = t


def _match_type(kinds: list[str]) -> str:
    if "range" in kinds:
        return "range"
    if "ternary" in kinds or "optional" in kinds:
        return "ternary"
    if "lpm" in kinds:
        return "lpm"
    return "exact"


class TableBuilder:
    """Builds one table's BMv2 JSON (everything but its next nodes) and its P4Info facts."""

    def __init__(self, ctx: Context, actions: ActionLowering) -> None:
        self.ctx = ctx
        self.actions = actions

    def build(self, sym: TableSymbol, env: Env, pipeline: dict) -> tuple[dict, list[dict], dict[str, str]]:
        """(table JSON without next nodes, primitives computing key temporaries, P4 action name ->
        BMv2 action name)."""
        ctx = self.ctx
        d = sym.decl
        ex = ExpressionLowering(ctx.scope, env)
        info = TableInfo(annotations=ctx.annotations_text(d.annotations))
        pre: list[dict] = []
        keys, key_types, selector_inputs = self._keys(sym, env, ex, info, pre)
        action_ids, action_names, by_p4_name = self._actions(d, env, info)
        aid, const_default, data = self._default_action(d, ex, info, action_ids, action_names, by_p4_name)
        size_prop = d.property("size")
        size = DEFAULT_TABLE_SIZE
        if isinstance(size_prop, ast.ExpressionProperty):
            size = int(ctx.scope.const_eval(size_prop.value, ex._const_lookup))
            info.size = size
        table: dict = {
            "name": sym.name, "id": ctx.fresh_table_id(), "key": keys,
            "match_type": _match_type([k["match_type"] for k in keys]),
            "type": "simple", "max_size": size, "with_counters": False,
            "support_timeout": self._bool_property(d, "support_timeout", ex),
            "direct_meters": None, "action_ids": action_ids, "actions": action_names,
            "base_default_next": None, "next_tables": {},
            "default_entry": {"action_id": aid, "action_const": const_default,
                              "action_data": data, "action_entry_const": const_default},
        }
        self._implementation(d, table, info, ex, selector_inputs, pipeline, sym)
        if table["type"] != "simple":
            # BMv2 refuses a const default action on an action profile's table (it loads a
            # changeable one, which p4c leaves out with a warning): the default is kept, not const
            table["default_entry"].update(action_const=False, action_entry_const=False)
        self._direct_resources(d, table, info, sym)
        entries = d.property("entries")
        if isinstance(entries, ast.EntriesProperty):
            info.is_const_table = entries.is_const
            table["entries"] = self._entries(ex, entries, keys, key_types, by_p4_name, sym)
        # BMv2 knows no "optional" match type: like p4c, the JSON says "ternary" (keys and const
        # entries) and only the P4Info keeps OPTIONAL (from the hints' source match kinds).
        for k in [*keys, *(m for e in table.get("entries", ()) for m in e["match_key"])]:
            if k["match_type"] == "optional":
                k["match_type"] = "ternary"
        ctx.tables[sym.name] = info
        _note_explicit_id(ctx, sym.name, d.annotations)
        return table, pre, {p4: lowered[1] for p4, lowered in by_p4_name.items()}

    def _keys(self, sym: TableSymbol, env: Env, ex: ExpressionLowering, info: TableInfo,
              pre: list[dict]) -> tuple[list[dict], list[Any], list[dict]]:
        """The table's JSON keys, their P4 types and its selector inputs; the key facts go into
        ``info``, primitives computing key temporaries into ``pre``."""
        ctx = self.ctx
        keys: list[dict] = []
        key_types: list[Any] = []
        selector_inputs: list[dict] = []
        key_prop = sym.decl.property("key")
        for el in (key_prop.elements if isinstance(key_prop, ast.KeyProperty) else ()):
            mk = el.match_kind
            if mk not in ctx.scope.match_kinds:
                raise fail(el, f"unknown match kind '{mk}'")
            name = _annotated_name(el.annotations)
            if name is None and not _names_itself(el.expression):
                raise fail(el, f"{source_text(el.expression)}: a complex key expression needs a "
                               "@name annotation (the control plane's name for it)")
            name = name or source_text(el.expression)
            if mk == "selector":
                j, t = ex.lower(el.expression)
                selector_inputs.append(j if j.get("type") == "field" else
                                       {"type": "expression", "value": j, "bitwidth": bit_width(t)})
                continue
            target, width, t = self._key_target(ex, self._run_calls(el.expression, env, pre), pre, sym)
            keys.append({"match_type": mk, "name": name, "target": target, "mask": None})
            info.key_match_kinds.append(mk)
            key_types.append(t)
            _note_serializable_enum(self.ctx, t)
            info.key_names.append(name)
            info.key_annotations.append(ctx.annotations_text(el.annotations))
            info.key_bitwidths.append(width)
            info.key_type_names.append(new_type_name(t))
        return keys, key_types, selector_inputs

    def _actions(self, d: ast.TableDecl, env: Env,
                 info: TableInfo) -> tuple[list[int], list[str], dict[str, tuple[int, str, list]]]:
        """The table's actions, lowered: their BMv2 ids and names (each once, in order) and,
        per P4 name, (id, name, action data parameters); scopes and annotations into ``info``."""
        acts_prop = d.property("actions")
        if not isinstance(acts_prop, ast.ActionsProperty):
            raise fail(d, f"table '{d.name}' has no actions")
        action_ids: list[int] = []
        action_names: list[str] = []
        by_p4_name: dict[str, tuple[int, str, list]] = {}
        for ref in acts_prop.actions:
            a = env.lookup(ref.name)
            if not isinstance(a, ActionSymbol):
                raise fail(ref, f"'{ref.name}' is not an action")
            lowered = self.actions.lower(a, env, ref.args, ref)
            aid, aname, _ = lowered
            if aid not in action_ids:
                action_ids.append(aid)
                action_names.append(aname)
            by_p4_name[ref.name] = lowered
            scope = "TABLE_AND_DEFAULT"
            if ast.find_annotation(ref.annotations, "defaultonly"):
                scope = "DEFAULT_ONLY"
            elif ast.find_annotation(ref.annotations, "tableonly"):
                scope = "TABLE_ONLY"
            info.action_scopes[aname] = scope
            info.action_ref_annotations[aname] = _action_ref_annotations(self.ctx, ref.annotations)
        return action_ids, action_names, by_p4_name

    def _default_action(self, d: ast.TableDecl, ex: ExpressionLowering, info: TableInfo,
                        action_ids: list[int], action_names: list[str],
                        by_p4_name: dict[str, tuple[int, str, list]]) -> tuple[int, bool, list[str]]:
        """(action id, const, action data) of the default action; without one, NoAction (added
        to the table's actions, default-only, when it is not among them)."""
        ctx = self.ctx
        dprop = d.property("default_action")
        if isinstance(dprop, ast.DefaultActionProperty):
            ref = dprop.action
            if ref.name not in by_p4_name:
                raise fail(ref, f"default action '{ref.name}' is not in the actions of table '{d.name}'")
            aid, aname, params = by_p4_name[ref.name]
            const_default = dprop.is_const
            data = self._action_data(ex, ref, params, skip=len(ref.args) - len(params))
        else:
            noact = ctx.global_env.lookup("NoAction")
            if not isinstance(noact, ActionSymbol):
                raise fail(d, "NoAction is not declared (include core.p4)")
            aid, aname, _ = self.actions.lower(noact, ctx.global_env, (), d)
            if aid not in action_ids:
                action_ids.append(aid)
                action_names.append(aname)
                info.action_scopes[aname] = "DEFAULT_ONLY"
            const_default, data = False, []
            by_p4_name.setdefault("NoAction", (aid, aname, []))
        info.const_default_action = const_default
        return aid, const_default, data

    def _run_calls(self, e: ast.Expression, env: Env, pre: list[dict]) -> ast.Expression:
        """A key expression whose function calls run (into ``pre``) before the lookup."""
        hoister = CallHoister(StatementLowering(self.ctx, env, None))
        if not hoister.has_call(e):
            return e
        e = hoister.value(e)
        pre += predicate(self.ctx, hoister.items, e)
        return e

    def _key_target(self, ex: ExpressionLowering, e: ast.Expression, pre: list[dict],
                    sym: TableSymbol) -> tuple[list, int, Any]:
        if isinstance(e, ast.MethodCallExpression) and isinstance(e.method, ast.MemberExpression) \
                and e.method.member == "isValid":
            v = ex.value_of(e.method.expr)
            if isinstance(v, HeaderValue):
                return [v.name, "$valid$"], 1, Bool()
        if isinstance(e, (ast.PathExpression, ast.MemberExpression, ast.IndexExpression)):
            v = ex.value_of(e)
            if isinstance(v, FieldValue):
                return [v.header, v.name], bit_width(v.type), v.type
        j, t = ex.lower(e)
        width = bit_width(t)
        tmp = self.ctx.out.add_scalar(f"key_{sym.name.split('.')[-1]}", t if not isinstance(t, Bool) else Bits(1))
        pre.append({"op": "assign", "parameters": [{"type": "field", "value": ["scalars", tmp]}, to_data(j, t)]})
        return ["scalars", tmp], width, t

    def _action_data(self, ex: ExpressionLowering, ref: ast.ActionRef, params: list, skip: int) -> list[str]:
        args = list(ref.args)[max(skip, 0):]
        if len(args) != len(params):
            raise fail(ref, f"action '{ref.name}' needs {len(params)} action data argument(s), got {len(args)}")
        out = []
        for a, (pname, t) in zip(args, params):
            v = self.ctx.scope.const_eval(a, ex._const_lookup, t)
            if isinstance(v, bool):
                v = int(v)
            out.append(data_hex(int(v), bit_width(t)))
        return out

    def _bool_property(self, d: ast.TableDecl, name: str, ex: ExpressionLowering) -> bool:
        prop = d.property(name)
        if not isinstance(prop, ast.ExpressionProperty):
            return False
        return bool(self.ctx.scope.const_eval(prop.value, ex._const_lookup))

    def _implementation(self, d: ast.TableDecl, table: dict, info: Any, ex: ExpressionLowering,
                        selector_inputs: list[dict], pipeline: dict, sym: TableSymbol) -> None:
        prop = d.property("implementation")
        if not isinstance(prop, ast.ExpressionProperty):
            return  # selector keys without an action_selector select nothing (p4c drops them)
        v = prop.value
        if isinstance(v, ast.MethodCallExpression):
            kind = source_text(v.method).rstrip("()")
            args = [self.ctx.scope.const_eval(a, ex._const_lookup) if not isinstance(a, ast.MemberExpression)
                    else a.member for a in v.args]
            # p4c takes the instance's name from the property's @name, as written
            name = (_annotated_name(prop.annotations) or "").lstrip(".") or \
                f"{sym.name}_{'selector' if kind == 'action_selector' else 'profile'}"
        else:
            inst = ex.value_of(v)
            if not isinstance(inst, ExternInstance) or inst.kind not in ("action_profile", "action_selector"):
                raise fail(v, "implementation must be an action_profile or action_selector")
            kind, args, name = inst.kind, inst.args, inst.name
        profile = next((p for p in pipeline["action_profiles"] if p["name"] == name), None)
        if profile is None:
            profile = {"name": name, "id": self.ctx.fresh_profile_id(), "max_size": int(args[1] if kind == "action_selector" else args[0])}
            if kind == "action_selector":
                if not selector_inputs:
                    raise fail(d, f"table '{d.name}' uses an action_selector but has no selector keys")
                profile["selector"] = {"algo": str(args[0]), "input": selector_inputs}
            pipeline["action_profiles"].append(profile)
        table["type"] = "indirect_ws" if kind == "action_selector" else "indirect"
        table["action_profile"] = name
        info.implementation = name
        self.ctx.profile_kinds[name] = (kind, int(args[1] if kind == "action_selector" else args[0]))

    def _direct_resources(self, d: ast.TableDecl, table: dict, info: Any, sym: TableSymbol) -> None:
        for prop_name in ("counters", "meters"):
            prop = d.property(prop_name)
            if not isinstance(prop, ast.ExpressionProperty):
                continue
            if prop_name == "counters" and _constructs(prop.value, "direct_counter"):
                inst = self._inline_direct_counter(prop)
            elif not isinstance(prop.value, ast.PathExpression):
                raise UnsupportedError.at(prop.loc, f"inline {prop_name} instance")
            else:
                inst = self.ctx.externs.get(sym.control.qualify(prop.value.name)) or \
                    self.ctx.externs.get(prop.value.name)
            if inst is None:
                raise fail(prop, f"unknown {prop_name[:-1]} '{prop.value.name}'")
            if prop_name == "counters":
                if inst.kind != "direct_counter":
                    raise fail(prop, "counters = needs a direct_counter")
                for c in self.ctx.out.counter_arrays:
                    if c["name"] == inst.name:
                        c["binding"] = sym.name
                table["with_counters"] = True
                info.direct_counter = inst.name
            else:
                if inst.kind != "direct_meter":
                    raise fail(prop, "meters = needs a direct_meter")
                for m in self.ctx.out.meter_arrays:
                    if m["name"] == inst.name:
                        m["binding"] = sym.name
                        m["size"] = table["max_size"]  # BMv2 asserts a direct meter's size is its table's
                table["direct_meters"] = inst.name
                info.direct_meter = inst.name

    def _inline_direct_counter(self, prop: ast.ExpressionProperty) -> ExternInstance:
        """``counters = direct_counter(type)``: an instance of the table's own, named as p4c
        names it: the property's ``@name`` as written, else "counter"."""
        value = prop.value
        assert isinstance(value, ast.MethodCallExpression)
        name = _annotated_name(prop.annotations) or "counter"
        if name in self.ctx.externs:
            raise fail(prop, f"a second instance named '{name}'")
        decl = ast.InstantiationDecl(loc=prop.loc, name=name, annotations=prop.annotations,
                                     type=ast.TypeName(loc=value.loc, name="direct_counter"),
                                     args=value.args)
        t = self.ctx.scope.resolve(decl.type)
        return externs.instantiate(self.ctx, decl, name, t, lambda _name: None)

    def _entries(self, ex: ExpressionLowering, prop: ast.EntriesProperty, keys: list[dict],
                 key_types: list, by_p4_name: dict, sym: TableSymbol) -> list[dict]:
        def const(e: ast.Expression) -> int:
            return int(self.ctx.scope.const_eval(e, ex._const_lookup))

        def annotated(ent: ast.TableEntry) -> ast.Expression | None:
            ann = ast.find_annotation(ent.annotations, "priority")
            return ann.args[0] if ann is not None and len(ann.args) == 1 else None

        # `priority = N` entries: the larger N wins (P4 spec), turned into BMv2's smaller-wins.
        # `@priority(N)` alone follows p4c's BMv2 back end: N goes to BMv2 as it is and every
        # other entry gets its position (from 1), so there the smaller number wins.
        by_annotation = all(e.priority is None for e in prop.entries)
        explicit = [e.priority if e.priority is not None else annotated(e) for e in prop.entries]
        prios = [const(e) for e in explicit if e is not None]
        top = max(prios) if prios else 0
        out = []
        for i, ent in enumerate(prop.entries):
            exprs = list(ent.keys)
            if len(exprs) == 1 and isinstance(exprs[0], (ast.DefaultExpression, ast.DontCareExpression)) \
                    and len(keys) != 1:
                exprs = exprs * len(keys)
            if len(exprs) != len(keys):
                raise fail(ent, f"entry has {len(exprs)} key values for {len(keys)} keys")
            match_key = [self._match(ex, e, k, t) for e, k, t in zip(exprs, keys, key_types)]
            ref = ent.action
            if ref.name not in by_p4_name:
                raise fail(ref, f"action '{ref.name}' is not in the actions of table '{sym.decl.name}'")
            aid, _, params = by_p4_name[ref.name]
            data = self._action_data(ex, ref, params, skip=len(ref.args) - len(params))
            if by_annotation:
                prio = const(explicit[i]) if explicit[i] is not None else i + 1
            elif explicit[i] is not None:
                prio = top - const(explicit[i]) + 1
            else:
                prio = i + 1 + (top if prios else 0)
            out.append({"source_info": {}, "match_key": match_key,
                        "action_entry": {"action_id": aid, "action_data": data}, "priority": prio})
        return out

    def _match(self, ex: ExpressionLowering, e: ast.Expression, key: dict, t: Any) -> dict:
        mk = key["match_type"]
        width = 1 if key["target"][1] == "$valid$" else bit_width(t)
        full = (1 << width) - 1
        lookup = ex._const_lookup
        wild = isinstance(e, (ast.DefaultExpression, ast.DontCareExpression))

        def const(x: ast.Expression) -> int:
            v = ex.value_of(x) if isinstance(x, (ast.PathExpression, ast.MemberExpression)) else None
            if v is not None and hasattr(v, "value") and not isinstance(v, (FieldValue,)):
                val = v.value
            else:
                val = self.ctx.scope.const_eval(x, lookup)
            return int(val) & full

        if mk == "exact":
            if wild:
                raise fail(e, "exact keys cannot be wildcards")
            return {"match_type": "exact", "key": data_hex(const(e), width)}
        if mk == "lpm":
            if wild:
                return {"match_type": "lpm", "key": data_hex(0, width), "prefix_length": 0}
            if isinstance(e, ast.MaskExpression):
                value, mask = const(e.value), const(e.mask)
                plen = bin(mask).count("1")
                if mask != (full >> (width - plen)) << (width - plen):
                    raise fail(e, "lpm mask must be a prefix")
                return {"match_type": "lpm", "key": data_hex(value & mask, width), "prefix_length": plen}
            return {"match_type": "lpm", "key": data_hex(const(e), width), "prefix_length": width}
        if mk in ("ternary", "optional"):
            if wild:
                return {"match_type": mk, "key": data_hex(0, width), "mask": data_hex(0, width)}
            if isinstance(e, ast.MaskExpression):
                if mk == "optional":
                    raise fail(e, "optional keys take a value or _")
                value, mask = const(e.value), const(e.mask)
                return {"match_type": mk, "key": data_hex(value & mask, width), "mask": data_hex(mask, width)}
            return {"match_type": mk, "key": data_hex(const(e), width), "mask": data_hex(full, width)}
        if mk == "range":
            if wild:
                return {"match_type": "range", "start": data_hex(0, width), "end": data_hex(full, width)}
            if isinstance(e, ast.RangeExpression):
                return {"match_type": "range", "start": data_hex(const(e.low), width),
                        "end": data_hex(const(e.high), width)}
            v = const(e)
            return {"match_type": "range", "start": data_hex(v, width), "end": data_hex(v, width)}
        raise fail(e, f"match kind '{mk}' in const entries")


def _constructs(e: ast.Expression, extern: str) -> bool:
    """Whether ``e`` is a constructor call ``extern(...)``."""
    return isinstance(e, ast.MethodCallExpression) and isinstance(e.method, ast.PathExpression) \
        and e.method.name == extern


def _annotated_name(annotations: tuple) -> str | None:
    ann = ast.find_annotation(annotations, "name")
    if ann is not None and ann.args and isinstance(ann.args[0], ast.StringLiteral):
        return ann.args[0].value
    return None


def _names_itself(e: ast.Expression) -> bool:
    """A key expression with a control-plane name of its own, as p4c names keys: a path, member,
    stack element, slice, constant, ``x & mask`` of those, or ``h.isValid()``."""
    if isinstance(e, (ast.PathExpression, ast.IntLiteral)):
        return True
    if isinstance(e, ast.MemberExpression):
        return _names_itself(e.expr)
    if isinstance(e, ast.IndexExpression):
        return _names_itself(e.expr) and _names_itself(e.index)
    if isinstance(e, ast.SliceExpression):
        return _names_itself(e.expr) and _names_itself(e.high) and _names_itself(e.low)
    if isinstance(e, ast.BinaryExpression) and e.op == "&":
        return _names_itself(e.left) and _names_itself(e.right)
    if isinstance(e, ast.MethodCallExpression):
        m = e.method
        return (isinstance(m, ast.MemberExpression) and m.member == "isValid" and not e.args
                and _names_itself(m.expr))
    return False


def _action_ref_annotations(ctx: Context, annotations: ast.Annotations) -> list[str]:
    """A table's action reference's annotations for P4Info, in source order, ``@defaultonly``
    and ``@tableonly`` among them (as p4c writes them)."""
    out: list[str] = []
    for a in annotations:
        out += [f"@{a.name}"] if a.name in ("defaultonly", "tableonly") else ctx.annotations_text((a,))
    return out
