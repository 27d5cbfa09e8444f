"""Parse STF test files (the packet-test format of p4c's BMv2 test suite) into commands."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from .errors import StfSyntaxError

KEYWORDS = {"add", "setdefault", "packet", "expect", "wait", "mirroring_add", "mc_mgrp_create",
            "mc_node_create", "mc_node_associate", "check_counter", "register_read",
            "register_write", "remove", "no_packet"}


@dataclass
class Command:
    """One STF statement: its keyword, arguments and source line."""
    kind: str
    line: int
    args: dict = field(default_factory=dict)


def _int(tok: str, file: str, line: int) -> int:
    try:
        return int(tok, 0)
    except ValueError:
        raise StfSyntaxError(file, line, f"expected a number, got '{tok}'") from None


def _hex_payload(tokens: list[str], file: str, line: int, allow_wild: bool) -> tuple[str, bool]:
    text = "".join(tokens)
    exact_end = False
    if text.endswith("$"):
        exact_end, text = True, text[:-1]
    text = text.lower()
    allowed = "0123456789abcdef" + ("*" if allow_wild else "")
    bad = next((c for c in text if c not in allowed), None)
    if bad is not None:
        raise StfSyntaxError(file, line, f"bad character '{bad}' in packet data")
    if len(text) % 2 and not allow_wild:
        # like p4c's STF runner: a lone last digit is a byte of its own (``... 10 0`` ends in 0x00)
        text = text[:-1] + "0" + text[-1]
    return text, exact_end


_ACTION_RE = re.compile(r"^([A-Za-z_][\w.$]*)\s*\((.*)\)\s*$")


def parse_action(text: str, file: str, line: int) -> tuple[str, list[tuple[str, int]]]:
    """`name(p:v, ...)` -> (name, [(param, value)])."""
    m = _ACTION_RE.match(text.strip())
    if not m:
        raise StfSyntaxError(file, line, f"expected ACTION(PARAM:VALUE, ...), got '{text.strip()}'")
    params = []
    body = m.group(2).strip()
    if body:
        for part in body.split(","):
            if ":" not in part:
                raise StfSyntaxError(file, line, f"action parameter '{part.strip()}' needs NAME:VALUE")
            pname, pval = part.split(":", 1)
            params.append((pname.strip(), _int(pval.strip(), file, line)))
    return m.group(1), params


def parse_key_value(text: str, file: str, line: int) -> tuple[str, str, tuple]:
    """A `FIELD:VALUE` key: returns (field, kind, values) with kind exact/lpm/ternary/range."""
    if ":" not in text:
        raise StfSyntaxError(file, line, f"key '{text}' needs FIELD:VALUE")
    name, value = text.split(":", 1)
    if "&&&" in value:
        v, msk = value.split("&&&", 1)
        return name, "ternary", (_int(v, file, line), _int(msk, file, line))
    if "/" in value:
        v, plen = value.split("/", 1)
        return name, "lpm", (_int(v, file, line), _int(plen, file, line))
    for sep in ("..", "->"):
        if sep in value:
            lo, hi = value.split(sep, 1)
            return name, "range", (_int(lo, file, line), _int(hi, file, line))
    if "*" in value:
        if not value.lower().startswith("0x"):
            raise StfSyntaxError(file, line, f"wildcard value '{value}' must be hexadecimal")
        digits = value[2:]
        v = int(digits.replace("*", "0"), 16)
        msk = int("".join("0" if c == "*" else "f" for c in digits), 16)
        return name, "ternary", (v, msk)
    return name, "exact", (_int(value, file, line),)


def parse_stf(text: str, file: str = "<stf>") -> list[Command]:
    """Parse a whole STF file; raises StfSyntaxError at the first bad line."""
    commands = []
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        kw, _, rest = line.partition(" ")
        kw = kw.lower()
        rest = rest.strip()
        toks = rest.split()
        if kw == "add":
            commands.append(_parse_add(rest, file, lineno))
        elif kw == "setdefault":
            if len(toks) < 2:
                raise StfSyntaxError(file, lineno, "setdefault needs TABLE ACTION(...)")
            table, action_text = rest.split(None, 1)
            name, params = parse_action(action_text, file, lineno)
            commands.append(Command("setdefault", lineno, {"table": table, "action": name, "params": params}))
        elif kw in ("packet", "expect"):
            if not toks:
                raise StfSyntaxError(file, lineno, f"{kw} needs a PORT")
            port = _int(toks[0], file, lineno)
            data, exact_end = _hex_payload(toks[1:], file, lineno, kw == "expect")
            commands.append(Command(kw, lineno, {"port": port, "data": data, "exact_end": exact_end,
                                                 "any": kw == "expect" and not data}))
        elif kw == "wait":
            commands.append(Command("wait", lineno))
        elif kw == "no_packet":
            commands.append(Command("no_packet", lineno))
        elif kw == "remove":
            if [t.lower() for t in toks] != ["all"]:
                raise StfSyntaxError(file, lineno, "remove supports only 'remove all'")
            commands.append(Command("remove", lineno, {"all": True}))
        elif kw == "mirroring_add":
            if len(toks) < 2:
                raise StfSyntaxError(file, lineno, "mirroring_add needs SESSION PORT")
            commands.append(Command(kw, lineno, {"session": _int(toks[0], file, lineno),
                                                 "port": _int(toks[1], file, lineno)}))
        elif kw == "mc_mgrp_create":
            if len(toks) != 1:
                raise StfSyntaxError(file, lineno, "mc_mgrp_create needs MGRP")
            commands.append(Command(kw, lineno, {"mgrp": _int(toks[0], file, lineno)}))
        elif kw == "mc_node_create":
            if len(toks) < 1:
                raise StfSyntaxError(file, lineno, "mc_node_create needs RID PORT...")
            commands.append(Command(kw, lineno, {"rid": _int(toks[0], file, lineno),
                                                 "ports": [_int(t, file, lineno) for t in toks[1:]]}))
        elif kw == "mc_node_associate":
            if len(toks) != 2:
                raise StfSyntaxError(file, lineno, "mc_node_associate needs MGRP NODE")
            commands.append(Command(kw, lineno, {"mgrp": _int(toks[0], file, lineno),
                                                 "node": _int(toks[1], file, lineno)}))
        elif kw == "check_counter":
            commands.append(_parse_check_counter(rest, file, lineno))
        elif kw == "register_write":
            if len(toks) != 3:
                raise StfSyntaxError(file, lineno, "register_write needs REGISTER INDEX VALUE")
            commands.append(Command(kw, lineno, {"name": toks[0], "index": _int(toks[1], file, lineno),
                                                 "value": _int(toks[2], file, lineno)}))
        elif kw == "register_read":
            if len(toks) not in (2, 3):
                raise StfSyntaxError(file, lineno, "register_read needs REGISTER INDEX [EXPECTED]")
            commands.append(Command(kw, lineno, {"name": toks[0], "index": _int(toks[1], file, lineno),
                                                 "expected": _int(toks[2], file, lineno) if len(toks) == 3 else None}))
        else:
            raise StfSyntaxError(file, lineno, f"unknown STF command '{kw}'")
    return commands


def _parse_add(rest: str, file: str, lineno: int) -> Command:
    entry_id = None
    named = re.match(r"^(.*\))\s*=\s*\$?(\w+)\s*$", rest)
    if named:  # `add ... action(...) = ID` names the entry for check_counter(ID)
        rest, entry_id = named.group(1), named.group(2)
    m = re.search(r"[A-Za-z_][\w.$]*\s*\(.*\)\s*$", rest)
    if not m:
        raise StfSyntaxError(file, lineno, "add needs TABLE [PRIORITY] KEY:VALUE ... ACTION(...)")
    action, params = parse_action(m.group(0), file, lineno)
    head = rest[:m.start()].split()
    if not head:
        raise StfSyntaxError(file, lineno, "add needs a TABLE name")
    table, head = head[0], head[1:]
    priority = None
    if head and ":" not in head[0]:
        priority = _int(head[0], file, lineno)
        head = head[1:]
    keys = [parse_key_value(tok, file, lineno) for tok in head]
    return Command("add", lineno, {"table": table, "priority": priority, "keys": keys,
                                   "action": action, "params": params, "entry_id": entry_id})


def _parse_check_counter(rest: str, file: str, lineno: int) -> Command:
    m = re.match(r"^([\w.$]+)\s*\(\s*(\$?\w+)\s*\)\s*(.*)$", rest)
    if not m:
        raise StfSyntaxError(file, lineno, "check_counter needs COUNTER(INDEX) [packets|bytes] [==] VALUE")
    toks = m.group(3).split()
    kind = "packets"
    if toks and toks[0] in ("packets", "bytes"):
        kind, toks = toks[0], toks[1:]
    op = "=="
    if toks and toks[0] in ("==", "!=", "<", ">", "<=", ">="):
        op, toks = toks[0], toks[1:]
    if len(toks) > 1 or (not toks and m.group(3).strip()):
        raise StfSyntaxError(file, lineno, "check_counter needs an expected VALUE")
    value = _int(toks[0], file, lineno) if toks else 0  # p4c's grammar: no check means == 0
    where = m.group(2)
    # an index, or the ID an `add ... = ID` gave an entry (its direct counter)
    index = None if where.startswith("$") or not where[0].isdigit() else _int(where, file, lineno)
    entry = where.lstrip("$") if index is None else None
    return Command("check_counter", lineno, {"name": m.group(1), "index": index, "entry": entry,
                                             "kind": kind, "op": op, "value": value})