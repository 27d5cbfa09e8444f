"""Controls linked into a BMv2 pipeline: the lowered items of an apply block (see
`statements.ControlLowering`) become a graph of tables and conditionals."""
from __future__ import annotations

import re


from p4target.compiler.context import Context
from p4target.compiler.ir import ApplyTable, ExitItem, HitItem, IfItem, Item, Prims, ReturnItem, SubBlock, SwitchItem
from p4target.compiler.semantics import fail
from p4target.compiler.source import SourceLocation
from p4target.compiler.tables import ActionLowering, TableBuilder
from p4target.compiler.values import TableSymbol


def synthesized_action_name(loc: SourceLocation | None) -> str:
    """p4c's name for an action made of statements outside any action: the source file's name
    (letters, digits and `_` from its first letter to its first `.`; an `l` after a final digit)
    and the line of the first statement, e.g. `forloopbmv2l99`; `act` without a position."""
    if loc is None or loc.line <= 0:
        return "act"
    stem = re.sub(r"^[^A-Za-z]*", "", loc.file.rsplit("/", 1)[-1]).split(".", 1)[0]
    name = re.sub(r"[^A-Za-z0-9_]", "", stem)
    if not name:
        return "act"
    return f"{name}{'l' if name[-1].isdigit() else ''}{loc.line}"


class PipelineLinker:
    """Turns lowered items into a BMv2 pipeline (tables, conditionals, synthesized tables)."""

    def __init__(self, ctx: Context, name: str, pipeline_id: int) -> None:
        self.ctx = ctx
        self.pipeline = {"name": name, "id": pipeline_id, "source_info": {}, "init_table": None,
                         "tables": [], "action_profiles": [], "conditionals": []}
        self.actions = ActionLowering(ctx)
        self.tables = TableBuilder(ctx, self.actions)
        self._action_names: dict[str, dict[str, str]] = {}

    def build(self, items: list[Item]) -> dict:
        self.pipeline["init_table"] = self.link(items, None, None)
        return self.pipeline

    def link(self, items: list[Item], nxt: str | None, ret: str | None) -> str | None:
        node = nxt
        for item in reversed(items):
            node = self.link_item(item, node, ret)
        return node

    def link_item(self, item: Item, nxt: str | None, ret: str | None) -> str | None:
        if isinstance(item, Prims):
            return self._action_table(item.primitives, nxt, item.loc) if item.primitives else nxt
        if isinstance(item, ExitItem):
            return self._action_table([{"op": "exit", "parameters": []}], None, item.loc)
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
            return self._action_table(pre, table["name"], getattr(item.node, "loc", None)) if pre else table["name"]
        if isinstance(item, HitItem):
            table, pre = self._table(item.table, item.node)
            hit = self.link(item.then, nxt, ret)
            miss = self.link(item.otherwise, nxt, ret)
            table["base_default_next"] = nxt
            table["next_tables"] = {"__HIT__": hit, "__MISS__": miss}
            return self._action_table(pre, table["name"], getattr(item.node, "loc", None)) if pre else table["name"]
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
            return self._action_table(pre, table["name"], getattr(item.node, "loc", None)) if pre else table["name"]
        raise fail(None, f"internal: cannot link {type(item).__name__}")

    def _table(self, sym: TableSymbol, node: object) -> tuple[dict, list[dict]]:
        if sym.name in self.ctx.applied_tables:
            raise fail(node, f"table '{sym.decl.name}' is applied more than once")
        self.ctx.applied_tables.add(sym.name)
        table, pre, p4_to_bmv2 = self.tables.build(sym, self.ctx.table_envs[sym.name], self.pipeline)
        self._action_names[sym.name] = p4_to_bmv2
        self.pipeline["tables"].append(table)
        return table, pre

    def _action_table(self, primitives: list[dict], nxt: str | None, loc: SourceLocation | None) -> str:
        ctx = self.ctx
        aname = ctx.action_name(synthesized_action_name(loc))
        aid = ctx.out.add_action(aname, [], primitives)
        tname = ctx.fresh("tbl_" + aname)
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
