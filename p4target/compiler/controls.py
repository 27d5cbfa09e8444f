"""Controls: locals declared, the apply block lowered, and the result linked into a BMv2
pipeline graph of tables and conditionals."""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from p4target.compiler import ast, externs
from p4target.compiler.semantics import fail
from p4target.compiler.statements import (ApplyTable, ExitItem, HitItem, IfItem, Item, Prims,
                                          ReturnItem, StatementLowering, SubBlock, SwitchItem)
from p4target.compiler.tables import ActionLowering, TableBuilder
from p4target.compiler.types import BlockT, ExternT
from p4target.compiler.values import (ActionSymbol, BlockInstance, ConstValue, ControlContext,
                                      TableSymbol, Value)
from p4target.errors import UnsupportedError

if TYPE_CHECKING:
    from p4target.compiler.context import Context


class ControlLowering:
    """One control instance: ``prefix`` names its tables, actions and externs."""

    def __init__(self, ctx: "Context", decl: ast.ControlDecl, prefix: str,
                 bindings: dict[str, Value], block_kind: str = "control") -> None:
        self.ctx = ctx
        self.decl = decl
        self.control = ControlContext(prefix, decl)
        self.env = ctx.global_env.child(bindings)
        self.block_kind = block_kind
        self.init: list[Item] = []
        sl = StatementLowering(ctx, self.env, self.control, block_kind=block_kind)
        for local in decl.locals:
            self._declare(local, sl)

    def _declare(self, d: ast.Declaration, sl: StatementLowering) -> None:
        ctx = self.ctx
        if isinstance(d, ast.ConstDecl):
            t = ctx.scope.resolve(d.type)
            self.env.define(d.name, ConstValue(ctx.scope.const_eval(d.value, sl.ex._const_lookup, t), t))
        elif isinstance(d, ast.VariableDecl):
            self.init += sl.statement(d)
        elif isinstance(d, ast.ActionDecl):
            self.env.define(d.name, ActionSymbol(d, self.control.qualify(d.name, d.annotations), self.control))
        elif isinstance(d, ast.TableDecl):
            sym = TableSymbol(d, self.control.qualify(d.name, d.annotations), self.control)
            self.env.define(d.name, sym)
            ctx.table_envs[sym.name] = self.env
        elif isinstance(d, ast.InstantiationDecl):
            t = ctx.scope.resolve(d.type)
            name = self.control.qualify(d.name, d.annotations)
            if isinstance(t, ExternT):
                # a control instance applied more than once keeps one object per extern instance
                inst = ctx.externs.get(name)
                if inst is None or inst.decl is not d:
                    inst = externs.instantiate(ctx, d, name, t, sl.ex._const_lookup)
                self.env.define(d.name, inst)
            elif isinstance(t, BlockT) and isinstance(t.decl, ast.ControlDecl):
                self.env.define(d.name, BlockInstance(t.decl, name, d.args,
                                                      sl.constructor_bindings(t.decl, d.args, d)))
            else:
                raise UnsupportedError.at(d.loc, f"instantiation of {t}")
        else:
            raise UnsupportedError.at(d.loc, f"control local {type(d).__name__}")

    def apply_items(self) -> list[Item]:
        sl = StatementLowering(self.ctx, self.env.child(), self.control, block_kind=self.block_kind)
        items = sl.block(self.decl.body.statements)
        return list(self.init) + items


class PipelineLinker:
    """Turns lowered items into a BMv2 pipeline (tables, conditionals, synthesized tables)."""

    def __init__(self, ctx: "Context", name: str, pipeline_id: int) -> None:
        self.ctx = ctx
        self.pipeline = {"name": name, "id": pipeline_id, "source_info": {}, "init_table": None,
                         "tables": [], "action_profiles": [], "conditionals": []}
        self.actions = ActionLowering(ctx)
        self.tables = TableBuilder(ctx, self.actions)
        self._action_names: dict[str, dict[str, str]] = {}

    def build(self, items: list[Item]) -> dict:
        self.pipeline["init_table"] = self.link(items, None, None)
        return self.pipeline

    def link(self, items: list[Item], nxt: Optional[str], ret: Optional[str]) -> Optional[str]:
        node = nxt
        for item in reversed(items):
            node = self.link_item(item, node, ret)
        return node

    def link_item(self, item: Item, nxt: Optional[str], ret: Optional[str]) -> Optional[str]:
        if isinstance(item, Prims):
            return self._action_table(item.primitives, nxt) if item.primitives else nxt
        if isinstance(item, ExitItem):
            return self._action_table([{"op": "exit", "parameters": []}], None)
        if isinstance(item, ReturnItem):
            return ret
        if isinstance(item, SubBlock):
            return self.link(item.items, nxt, nxt)
        if isinstance(item, IfItem):
            t = self.link(item.then, nxt, ret)
            f = self.link(item.otherwise, nxt, ret)
            cond = item.cond
            if cond.get("type") == "bool":
                return t if cond["value"] else f
            name = f"node_{self.ctx.fresh_node_id() + 2}"
            self.pipeline["conditionals"].append({"name": name, "id": len(self.pipeline["conditionals"]),
                                                  "source_info": {}, "expression": cond,
                                                  "true_next": t, "false_next": f})
            return name
        if isinstance(item, ApplyTable):
            table, pre = self._table(item.table, item.node)
            table["base_default_next"] = nxt
            table["next_tables"] = {a: nxt for a in table["actions"]}
            return self._action_table(pre, table["name"]) if pre else table["name"]
        if isinstance(item, HitItem):
            table, pre = self._table(item.table, item.node)
            hit = self.link(item.then, nxt, ret)
            miss = self.link(item.otherwise, nxt, ret)
            table["base_default_next"] = nxt
            table["next_tables"] = {"__HIT__": hit, "__MISS__": miss}
            return self._action_table(pre, table["name"]) if pre else table["name"]
        if isinstance(item, SwitchItem):
            table, pre = self._table(item.table, item.node)
            default = self.link(item.default, nxt, ret) if item.default is not None else nxt
            next_tables = {a: default for a in table["actions"]}
            p4_to_bmv2 = self._action_names[item.table.name]
            for labels, body in item.cases:
                target = self.link(body, nxt, ret)
                for label in labels:
                    if label not in p4_to_bmv2:
                        raise fail(item.node, f"'{label}' is not an action of table '{item.table.decl.name}'")
                    next_tables[p4_to_bmv2[label]] = target
            table["base_default_next"] = nxt
            table["next_tables"] = next_tables
            return self._action_table(pre, table["name"]) if pre else table["name"]
        raise fail(None, f"internal: cannot link {type(item).__name__}")

    def _table(self, sym: TableSymbol, node: object) -> tuple[dict, list[dict]]:
        if sym.name in self.ctx.applied_tables:
            raise fail(node, f"table '{sym.decl.name}' is applied more than once")
        self.ctx.applied_tables.add(sym.name)
        table, pre, p4_to_bmv2 = self.tables.build(sym, self.ctx.table_envs[sym.name], self.pipeline)
        self._action_names[sym.name] = p4_to_bmv2
        self.pipeline["tables"].append(table)
        return table, pre

    def _action_table(self, primitives: list[dict], nxt: Optional[str]) -> str:
        ctx = self.ctx
        aname = ctx.action_name("act")
        aid = ctx.out.add_action(aname, [], primitives)
        tname = ctx.fresh("tbl_act")
        ctx.hidden.add(tname)
        ctx.hidden.add(aname)
        self.pipeline["tables"].append({
            "name": tname, "id": ctx.fresh_table_id(), "source_info": {}, "key": [], "match_type": "exact",
            "type": "simple", "max_size": 1024, "with_counters": False, "support_timeout": False,
            "direct_meters": None, "action_ids": [aid], "actions": [aname], "base_default_next": nxt,
            "next_tables": {aname: nxt},
            "default_entry": {"action_id": aid, "action_const": True, "action_data": [],
                              "action_entry_const": True}})
        return tname
