"""Back ends for action bodies: BMv2 actions have no branches, so structured items become
straight-line primitives, either predicated (each assignment guarded by its branch condition)
or with BMv2's `_jump_if_zero` / `_jump` primitives."""
from __future__ import annotations

from typing import Any

from p4target.compiler.bmv2_json import expr, hexstr
from p4target.compiler.context import Context
from p4target.compiler.ir import (BreakItem, ContinueItem, ExitItem, IfItem, Item, LoopItem, Prims,
                                  ReturnItem, SubBlock, assign, prim)
from p4target.compiler.semantics import fail
from p4target.compiler.types import Bool
from p4target.errors import UnsupportedError


def predicate(ctx: Context, items: list[Item], node: Any, pred: dict | None = None) -> list[dict]:
    """Flatten structured items into straight-line primitives (BMv2 actions have no branches):
    each branch's assignments become ``dst = cond ? value : dst``; conditions are saved first.
    A ``return`` under a condition sets a flag that guards the rest of its action body."""
    return _Predicator(ctx, node).body(items, pred)


class _Frame:
    """One inlined body: its return flag (created on the first conditional return)."""

    def __init__(self) -> None:
        self.flag: dict | None = None


class _Predicator:
    def __init__(self, ctx: Context, node: Any) -> None:
        self.ctx = ctx
        self.node = node
        self.exited = False  # an unconditional exit was emitted: nothing after it runs

    def _unsupported(self, what: str, hint: str = "") -> UnsupportedError:
        return UnsupportedError.at(getattr(self.node, "loc", None), what, hint)

    def body(self, items: list[Item], pred: dict | None) -> list[dict]:
        frame = _Frame()
        out = self.items(items, pred, frame, top=True)
        if frame.flag is not None:
            out.insert(0, assign(frame.flag, {"type": "hexstr", "value": "0x0"}))
        return out

    def _guard(self, pred: dict | None, frame: _Frame) -> dict | None:
        if frame.flag is None:
            return pred
        live = expr("not", None, expr("d2b", None, frame.flag))
        return live if pred is None else expr("and", pred, live)

    def items(self, items: list[Item], pred: dict | None, frame: _Frame, top: bool) -> list[dict]:
        out: list[dict] = []
        for it in items:
            if self.exited:
                break  # BMv2 runs an action's primitives after `exit`: leave them out
            guard = self._guard(pred, frame)
            if isinstance(it, ReturnItem):
                if top:
                    break  # everything after it in this body is dead
                if frame.flag is None:
                    frame.flag = {"type": "field", "value": ["scalars", self.ctx.out.add_scalar("returned", Bool())]}
                out.append(assign(frame.flag, expr("?", {"type": "hexstr", "value": "0x1"}, frame.flag, cond=guard)))
            elif isinstance(it, SubBlock):
                out += self.body(it.items, guard)
            elif isinstance(it, Prims):
                for p in it.primitives:
                    if guard is None:
                        out.append(p)
                    elif p["op"] == "assign":
                        dst, src = p["parameters"]
                        out.append(assign(dst, expr("?", src, dst, cond=guard)))
                    elif p["op"] == "verify":  # parser only: a check that holds when skipped
                        check, error = p["parameters"]
                        out.append({"op": "verify", "parameters": [expr("or", expr("not", None, guard), check), error]})
                    else:
                        raise self._unsupported(f"'{p['op']}' under a condition inside an action",
                                                "move the condition into the control's apply block")
            elif isinstance(it, IfItem):
                cond = it.cond if guard is None else expr("and", guard, it.cond)
                els = expr("not", None, it.cond)
                els = els if guard is None else expr("and", guard, els)
                f_then = {"type": "field", "value": ["scalars", self.ctx.out.add_scalar("cond", Bool())]}
                f_else = {"type": "field", "value": ["scalars", self.ctx.out.add_scalar("cond", Bool())]}
                out.append(assign(f_then, expr("b2d", None, cond)))
                out.append(assign(f_else, expr("b2d", None, els)))
                out += self.items(it.then, expr("d2b", None, f_then), frame, top=False)
                out += self.items(it.otherwise, expr("d2b", None, f_else), frame, top=False)
            elif isinstance(it, ExitItem):
                if guard is not None:
                    raise self._unsupported("exit under a condition inside an action")
                out.append(prim("exit"))
                self.exited = True
            else:
                raise fail(self.node, "tables cannot be applied inside an action")
        return out


def action_primitives(ctx: Context, items: list[Item], node: Any) -> list[dict]:
    """A table action's body as BMv2 primitives: predicated assignments when every branch only
    assigns, else BMv2's `_jump_if_zero` / `_jump` (extern calls or exit under a condition)."""
    if _branches_do_more_than_assign(items, inside_branch=False) or \
            (_contains(items, ExitItem) and _contains(items, ReturnItem, inside_branch=True)):
        # (an exit after a conditional return runs under that return's flag: a condition)
        return _Jumps(ctx, node).emit_body(items)
    return predicate(ctx, items, node)


def _branches_do_more_than_assign(items: list[Item], inside_branch: bool) -> bool:
    for it in items:
        if isinstance(it, LoopItem):
            return True
        if isinstance(it, SubBlock) and _branches_do_more_than_assign(it.items, inside_branch):
            return True
        if isinstance(it, IfItem) and (_branches_do_more_than_assign(it.then, True) or
                                       _branches_do_more_than_assign(it.otherwise, True)):
            return True
        if inside_branch and isinstance(it, ExitItem):
            return True
        if inside_branch and isinstance(it, Prims) and any(p["op"] != "assign" for p in it.primitives):
            return True
    return False


def _contains(items: list[Item], kind: type, inside_branch: bool = False) -> bool:
    """Whether ``items`` hold a ``kind`` item (only inside an `if`'s branch, if asked)."""
    for it in items:
        if isinstance(it, kind) and not inside_branch:
            return True
        if isinstance(it, SubBlock) and _contains(it.items, kind, inside_branch):
            return True
        if isinstance(it, IfItem) and (_contains(it.then, kind) or _contains(it.otherwise, kind)):
            return True
        if isinstance(it, LoopItem) and _contains(it.body, kind):
            return True
    return False


class _Jumps:
    """Structured items -> primitives with jumps to absolute primitive indices."""

    def __init__(self, ctx: Context, node: Any) -> None:
        self.ctx = ctx
        self.node = node
        self.out: list[dict] = []
        self.loops: list[tuple[list[int], list[int]]] = []  # (break jumps, continue jumps)
        self.exits: list[int] = []  # the jumps after each `exit`, to the end of the action

    def _here(self) -> dict:
        return hexstr(len(self.out))

    def emit_body(self, items: list[Item]) -> list[dict]:
        returns: list[int] = []
        self._emit(items, returns)
        for i in returns + self.exits:
            self.out[i]["parameters"] = [self._here()]
        return self.out

    def _emit(self, items: list[Item], returns: list[int]) -> None:
        for it in items:
            if isinstance(it, Prims):
                self.out += it.primitives
            elif isinstance(it, SubBlock):
                inner: list[int] = []
                self._emit(it.items, inner)
                for i in inner:
                    self.out[i]["parameters"] = [self._here()]
            elif isinstance(it, IfItem):
                branch = len(self.out)
                self.out.append({"op": "_jump_if_zero", "parameters": [expr("b2d", None, it.cond), None]})
                self._emit(it.then, returns)
                if it.otherwise:
                    skip = len(self.out)
                    self.out.append({"op": "_jump", "parameters": [None]})
                    self.out[branch]["parameters"][1] = self._here()
                    self._emit(it.otherwise, returns)
                    self.out[skip]["parameters"] = [self._here()]
                else:
                    self.out[branch]["parameters"][1] = self._here()
            elif isinstance(it, LoopItem):
                self._emit_loop(it, returns)
            elif isinstance(it, (BreakItem, ContinueItem)):
                breaks, continues = self.loops[-1]
                (breaks if isinstance(it, BreakItem) else continues).append(len(self.out))
                self.out.append({"op": "_jump", "parameters": [None]})
            elif isinstance(it, ReturnItem):
                returns.append(len(self.out))
                self.out.append({"op": "_jump", "parameters": [None]})
            elif isinstance(it, ExitItem):
                # BMv2's `exit` marks the packet and the action goes on: jump past the rest
                self.out.append(prim("exit"))
                self.exits.append(len(self.out))
                self.out.append({"op": "_jump", "parameters": [None]})
            else:
                raise fail(self.node, "tables cannot be applied inside an action")

    def _emit_loop(self, loop: LoopItem, returns: list[int]) -> None:
        """init; top: if !cond goto end; body; (continue lands here) update; goto top; end:"""
        self._emit(loop.init, returns)
        top = len(self.out)
        test = None
        if loop.cond is not None:
            test = len(self.out)
            self.out.append({"op": "_jump_if_zero", "parameters": [expr("b2d", None, loop.cond), None]})
        self.loops.append(([], []))
        self._emit(loop.body, returns)
        breaks, continues = self.loops.pop()
        for i in continues:
            self.out[i]["parameters"] = [self._here()]
        self._emit(loop.update, returns)
        self.out.append({"op": "_jump", "parameters": [hexstr(top)]})
        if test is not None:
            self.out[test]["parameters"][1] = self._here()
        for i in breaks:
            self.out[i]["parameters"] = [self._here()]
