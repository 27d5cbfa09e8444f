"""Control pipelines (BMv2: `Pipeline`, `Conditional`, `ActionCall` control-flow nodes): a graph
of named nodes, each a compiled function returning the next node's name."""
from __future__ import annotations

from typing import Callable

from ..packet import PacketState
from .actions import Primitives
from .match_tables import ProgramActions, TableBuilder


def _cond_node(cond: Callable, t: str | None, f: str | None) -> Callable:
    def node(P: PacketState):
        return t if cond(P) else f
    return node


def _call_node(fn: Callable, nxt: str | None) -> Callable:
    def node(P: PacketState):
        fn(P, ())
        return nxt
    return node


def build_pipeline(pipe: dict, tables: TableBuilder, actions: ProgramActions,
                   prims: Primitives) -> Callable[[PacketState], None]:
    """The function `(P) -> None` running one pipeline from its init node; as in BMv2, an
    `exit` primitive (which marks the packet) ends it before the next node."""
    nodes: dict[str, Callable] = {}
    for t in pipe.get("tables", []):
        nodes[t["name"]] = tables.build(t)
    for c in pipe.get("conditionals", []):
        cond = prims.ns.compile_fn("cond", "P", [f"return {prims.exprs.ex(c['expression'])}"])
        nodes[c["name"]] = _cond_node(cond, c.get("true_next"), c.get("false_next"))
    for ac in pipe.get("action_calls", []):
        spec = actions.get(ac["action_id"], f"action call '{ac['name']}'")
        nodes[ac["name"]] = _call_node(spec.fn, ac.get("next_node"))
    init = pipe.get("init_table")

    def run(P: PacketState) -> None:
        node = init
        P.exited = False
        while node is not None and not P.exited:
            node = nodes[node](P)
        P.exited = False
    return run
