"""Run parsed STF commands against an Engine and report what matched."""
from __future__ import annotations

import operator
import re
from dataclasses import dataclass, field

from p4target.engine import Engine, EngineError, Exact, Lpm, Range, Ternary, Optional

from .errors import StfError
from .parser import Command

_STF_PRIORITY_BASE = 10000
_COPY_SUFFIX = re.compile(r"_\d+$")
_OPS = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, ">": operator.gt,
        "<=": operator.le, ">=": operator.ge}


@dataclass
class StfResult:
    """Outcome of one STF run: printable lines and the failure count."""
    lines: list[str] = field(default_factory=list)
    failures: int = 0

    @property
    def ok(self) -> bool:
        return self.failures == 0


def _resolve(name: str, names, what: str) -> str:
    """Exact name, else the unique name ending in '.' + name (STF often omits the control)."""
    names = list(names)
    if name in names:
        return name
    cands = [n for n in names if n.endswith("." + name) or n.split(".")[-1] == name.split(".")[-1]
             and n.endswith(name)]
    if len(cands) == 1:
        return cands[0]
    cands = [n for n in names if n.split(".")[-1] == name.split(".")[-1]]
    if len(cands) == 1:
        return cands[0]
    raise StfError(f"unknown {what} '{name}'" + (f" (ambiguous: {', '.join(cands)})" if cands else ""))


def _resolve_key(name: str, names, what: str) -> str:
    """A table key field as STF names it: p4c's driver reads `f$0` as `f[0]`, and `h.$valid`
    or `h.valid` as the validity key `h.$valid$`."""
    name = re.sub(r"\$(\d+)", r"[\1]", name)
    names = list(names)
    tries = [name, name + "$"]
    if name.endswith(".valid"):
        tries.append(name[:-len("valid")] + "$valid$")
    for t in tries:
        try:
            return _resolve(t, names, what)
        except StfError:
            continue
    return _resolve(name, names, what)


def _match_hex(expected: str, actual: str, exact_end: bool) -> bool:
    if len(actual) < len(expected):
        return False
    if exact_end and len(actual) != len(expected):
        return False
    return all(e == "*" or e == a for e, a in zip(expected, actual))


def _diff(expected: str, actual: str) -> str:
    marks = "".join(" " if i < len(actual) and (e == "*" or e == actual[i]) else "^"
                    for i, e in enumerate(expected))
    return f"      expected {expected}\n      actual   {actual}\n               {marks.rstrip()}"


class StfRunner:
    """Executes STF commands in order; `packet` runs synchronously through the engine."""

    def __init__(self, engine: Engine, file: str = "<stf>") -> None:
        self.engine = engine
        self.file = file
        self.result = StfResult()
        self.expected: dict[int, list[Command]] = {}
        self.received: dict[int, list[str]] = {}
        self.nodes: list[int] = []
        self.entries: dict[str, tuple[str, int]] = {}  # `add ... = ID`: (table, handle)
        self.test_ports: set[int] = set()

    def say(self, text: str) -> None:
        self.result.lines.append(text)

    def fail(self, cmd: Command | None, text: str) -> None:
        self.result.failures += 1
        where = f"{self.file}:{cmd.line}: " if cmd is not None else ""
        self.say(f"{where}FAIL {text}")

    def run(self, commands: list[Command]) -> StfResult:
        # p4c's runner gives BMv2 an interface only for the ports its packet/expect lines name
        self.test_ports = {c.args["port"] for c in commands if c.kind in ("packet", "expect")}
        for cmd in commands:
            try:
                getattr(self, "_do_" + cmd.kind)(cmd)
            except (EngineError, ValueError) as exc:
                self.fail(cmd, f"{cmd.kind}: {exc}")
        self._check_outputs(final=True)
        return self.result

    # -- control plane -------------------------------------------------------------------
    def _action(self, table_actions, name: str, params: list[tuple[str, int]]) -> tuple[str, list[int]]:
        try:
            action = _resolve(name, table_actions, "action")
        except StfError:
            # a table may list its own copy of an action (bound directional arguments make
            # one per table, named like `a_0`); STF names the original
            copies = {_COPY_SUFFIX.sub("", n): n for n in table_actions}
            action = copies[_resolve(name, copies, "action")]
        spec = table_actions[action]
        given = dict(params)
        data = []
        for pname, _ in spec.params:
            if pname not in given:
                raise StfError(f"action '{action}' needs parameter '{pname}'")
            data.append(given.pop(pname))
        if given:
            raise StfError(f"action '{action}' has no parameter '{next(iter(given))}'")
        return action, data

    def _do_add(self, cmd: Command) -> None:
        a = cmd.args
        tname = _resolve(a["table"], self.engine.table_names(), "table")
        table = self.engine.table(tname)
        by_name = {}
        for kname, kind, vals in a["keys"]:
            field_names = [k.name for k in table.keys]
            resolved = _resolve_key(kname, field_names, f"key field of '{tname}'")
            by_name[resolved] = (kind, vals)
        key = []
        for kf in table.keys:
            if kf.name not in by_name:
                raise StfError(f"missing key field '{kf.name}' for table '{tname}'")
            kind, vals = by_name[kf.name]
            mt = kf.match_type
            if kind == "exact":
                key.append(Exact(vals[0]) if mt != "optional" else Optional(vals[0]))
            elif kind == "lpm":
                key.append(Lpm(vals[0], vals[1]))
            elif kind == "ternary":
                if mt == "optional":
                    key.append(Optional(vals[0], vals[1] == 0))
                elif mt == "lpm":
                    plen = bin(vals[1]).count("1")
                    key.append(Lpm(vals[0] & vals[1], plen))
                else:
                    key.append(Ternary(vals[0], vals[1]))
            else:
                key.append(Range(*vals))
        action, data = self._action(table.actions, a["action"], a["params"])
        priority = None
        if table.match_type == "ternary":
            # STF priorities rank the other way round from BMv2's (a higher STF number wins);
            # p4c's STF driver hands simple_switch 10000 - priority, and so do we
            priority = _STF_PRIORITY_BASE - (a["priority"] or 0)
        if table.profile is not None:
            # STF names an action directly; like p4c's BMv2 STF backend, give it a member
            member = self.engine.act_prof_add_member(table.profile.name, action, data)
            handle = self.engine.table_add(tname, key, priority=priority, member=member)
        else:
            handle = self.engine.table_add(tname, key, action, data, priority)
        if a.get("entry_id"):
            self.entries[a["entry_id"]] = (tname, handle)

    def _do_remove(self, cmd: Command) -> None:
        for tname in self.engine.table_names():
            self.engine.table_clear(tname)

    def _do_no_packet(self, cmd: Command) -> None:
        """p4c's `no_packet`: nothing more is expected; packets nobody expects fail anyway."""

    def _do_setdefault(self, cmd: Command) -> None:
        a = cmd.args
        tname = _resolve(a["table"], self.engine.table_names(), "table")
        action, data = self._action(self.engine.table(tname).actions, a["action"], a["params"])
        self.engine.table_set_default(tname, action, data)

    def _do_mirroring_add(self, cmd: Command) -> None:
        self.engine.mirroring_add(cmd.args["session"], cmd.args["port"])

    def _do_mc_mgrp_create(self, cmd: Command) -> None:
        self.engine.mc_mgrp_create(cmd.args["mgrp"])

    def _do_mc_node_create(self, cmd: Command) -> None:
        self.nodes.append(self.engine.mc_node_create(cmd.args["rid"], cmd.args["ports"]))

    def _do_mc_node_associate(self, cmd: Command) -> None:
        self.engine.mc_node_associate(cmd.args["mgrp"], cmd.args["node"])

    def _do_register_write(self, cmd: Command) -> None:
        name = _resolve(cmd.args["name"], self.engine.program.registers, "register")
        self.engine.register_write(name, cmd.args["index"], cmd.args["value"])

    def _do_register_read(self, cmd: Command) -> None:
        name = _resolve(cmd.args["name"], self.engine.program.registers, "register")
        value = self.engine.register_read(name, cmd.args["index"])
        exp = cmd.args["expected"]
        if exp is None:
            self.say(f"register {name}[{cmd.args['index']}] = {value:#x}")
        elif value == exp:
            self.say(f"ok   register {name}[{cmd.args['index']}] == {exp:#x}")
        else:
            self.fail(cmd, f"register {name}[{cmd.args['index']}] is {value:#x}, expected {exp:#x}")

    def _do_check_counter(self, cmd: Command) -> None:
        a = cmd.args
        self._check_outputs(final=False)
        prog = self.engine.program
        if a.get("entry") is not None:
            # a direct counter, read through the entry an `add ... = ID` named
            if a["entry"] not in self.entries:
                raise StfError(f"no entry was added as '{a['entry']}'")
            pk, by = self.engine.table_entry_counter(*self.entries[a["entry"]])
            name = a["name"]
            a = dict(a, index=f"${a['entry']}")
        else:
            names = list(prog.counters)
            name = _resolve(a["name"], names, "counter")
            pk, by = prog.counters[name].read(a["index"])
        got = pk if a["kind"] == "packets" else by
        if _OPS[a["op"]](got, a["value"]):
            self.say(f"ok   counter {name}[{a['index']}] {a['kind']} {got} {a['op']} {a['value']}")
        else:
            self.fail(cmd, f"counter {name}[{a['index']}] {a['kind']} is {got}, expected {a['op']} {a['value']}")

    # -- packets -------------------------------------------------------------------------
    def _do_packet(self, cmd: Command) -> None:
        data = bytes.fromhex(cmd.args["data"])
        for port, out in self.engine.process(cmd.args["port"], data):
            self.received.setdefault(port, []).append(out.hex())

    def _do_expect(self, cmd: Command) -> None:
        self.expected.setdefault(cmd.args["port"], []).append(cmd)

    def _do_wait(self, cmd: Command) -> None:
        self._check_outputs(final=False)

    def _check_outputs(self, final: bool) -> None:
        for port in sorted(set(self.expected) | set(self.received)):
            exps = self.expected.get(port, [])
            got = self.received.get(port, [])
            while exps and got:
                cmd = exps.pop(0)
                actual = got.pop(0)
                if cmd.args["any"] or _match_hex(cmd.args["data"], actual, cmd.args["exact_end"]):
                    self.say(f"ok   expect port {port}: matched ({len(actual) // 2} bytes)")
                else:
                    self.fail(cmd, f"expect port {port}: packet differs\n{_diff(cmd.args['data'], actual)}")
            if final:
                for cmd in exps:
                    self.fail(cmd, f"expect port {port}: no packet arrived"
                              + (f" (expected {cmd.args['data']})" if cmd.args["data"] else ""))
                exps.clear()
            for actual in got:
                if port in self.test_ports:
                    self.fail(None, f"unexpected packet on port {port}: {actual}")
                else:
                    self.say(f"note packet on port {port} ignored: the test names no port {port}")
            got.clear()
