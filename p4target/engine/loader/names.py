"""Every name the engine's generated code uses, declared once.

Generated functions take the packet `P` (and an action's data `D`) and run in one namespace
per program. The loader's code templates may use only the names below; the audit in
`codegen` refuses any other (besides fresh symbols `_<kind><n>` that `Namespace.const` binds
to objects of the program: counters, hash functions, constant id lists...).
"""
from __future__ import annotations

import random as _random
from typing import Any, Callable

from .. import hashes
from ..packet import AssertFailure, ExitControl, PacketState, ParserException

# -- locals ---------------------------------------------------------------------------------
# arguments: the packet, an action's runtime data, a varbit extractor's size in bits
ARGUMENTS = frozenset({"P", "D", "n"})
# the prologue of every function binds the PHV lists to short locals
PROLOGUE = "F = P.F; V = P.V; NX = P.NX"
# scratch locals of the templates (extractors: o, d, x, nb, total, shift; select keys: k, kc;
# deparser: out; primitives: _i index, _h/_d/_s header ids, _n length, _u union, _k/_v loop
# values, _pc an action's program counter with jumps)
LOCALS = frozenset({"F", "V", "NX", "o", "d", "x", "nb", "total", "shift", "k", "kc", "out",
                    "_i", "_h", "_d", "_s", "_n", "_u", "_k", "_v", "_pc"}) | ARGUMENTS

# -- globals: layout tables (set by the loader once the PHV is laid out) ---------------------
HEADER_BASE = "HB"        # header id -> slot of its first field
STACK_IDS = "STK"         # stack id -> header ids of its elements
HEADER_LEN = "HLEN"       # header id -> number of fields
HEADER_BYTES = "HBYTES"   # header id -> fixed size in bytes (varbit fields add their length)
HEADER_SPANS = "_SPANS"   # header id -> (first slot, number of fields), for stack push/pop
EXTRACTORS = "_EXT"       # header id -> extractor function (None: not extractable)
LAYOUT = frozenset({HEADER_BASE, STACK_IDS, HEADER_LEN, HEADER_BYTES, HEADER_SPANS, EXTRACTORS})

# -- globals: helpers ------------------------------------------------------------------------
LOOKAHEAD = "_look"       # _look(P, offset_bits, width_bits) -> int, PacketTooShort past the end


def two_comp(value: int, width: int) -> int:
    """`value` cut to `width` bits, read as two's complement."""
    value &= (1 << width) - 1
    return value - (1 << width) if value >> (width - 1) else value


def saturate(value: int, width: int, signed: bool) -> int:
    """`value` clamped to the range of a `width`-bit (signed) integer."""
    if signed:
        lo, hi = -(1 << (width - 1)), (1 << (width - 1)) - 1
    else:
        lo, hi = 0, (1 << width) - 1
    return lo if value < lo else hi if value > hi else value


def payload(P: PacketState) -> bytes:
    """The bytes after the parsed headers."""
    return P.data[P.off:]


def push_front(P: PacketState, sid: int, ids: list[int], count: int, spans: dict) -> None:
    V = P.V
    n = len(ids)
    for i in range(n - 1, -1, -1):
        src = i - count
        if src >= 0:
            V[ids[i]] = V[ids[src]]
            _copy_header(P, ids[i], ids[src], spans)
        else:
            V[ids[i]] = 0
    P.NX[sid] = min(n, P.NX[sid] + count)


def pop_front(P: PacketState, sid: int, ids: list[int], count: int, spans: dict) -> None:
    V = P.V
    n = len(ids)
    for i in range(n):
        src = i + count
        if src < n:
            V[ids[i]] = V[ids[src]]
            _copy_header(P, ids[i], ids[src], spans)
        else:
            V[ids[i]] = 0
    P.NX[sid] = max(0, P.NX[sid] - count)


def _copy_header(P: PacketState, dst: int, src: int, spans: dict) -> None:
    db, n = spans[dst]
    sb, _ = spans[src]
    P.F[db:db + n] = P.F[sb:sb + n]
    if P.VL:
        copy_varbit_lengths(P, db, sb, n)


def copy_varbit_lengths(P: PacketState, dst: int, src: int, n: int) -> None:
    """Copy the varbit lengths of the `n` slots from `src` on to the slots from `dst` on."""
    for k in range(n):
        if src + k in P.VL:
            P.VL[dst + k] = P.VL[src + k]
        else:
            P.VL.pop(dst + k, None)


def lookahead(too_short: int) -> Callable[[PacketState, int, int], int]:
    """The `_look` helper of a program whose PacketTooShort error value is `too_short`."""
    def look(P: PacketState, off: int, width: int) -> int:
        start = P.off * 8 + off
        end = start + width
        nbytes = (end + 7) // 8
        if nbytes > len(P.data):
            raise ParserException(too_short)
        first = start // 8
        chunk = int.from_bytes(P.data[first:nbytes], "big")
        return (chunk >> (nbytes * 8 - end)) & ((1 << width) - 1)
    return look


HELPERS: dict[str, Any] = {
    "_tcm": two_comp, "_sat": saturate, "_rand": _random.randint, "_pack": hashes.pack_bits,
    "_payload": payload, "_push": push_front, "_pop": pop_front, "_copy_vl": copy_varbit_lengths,
    "ParserException": ParserException, "ExitControl": ExitControl, "AssertFailure": AssertFailure,
}

# builtins the generated code calls; `__import__`, `open`, `eval`... are not among them
SAFE_BUILTINS: dict[str, Any] = {"any": any, "max": max, "min": min, "len": len, "sum": sum,
                                 "range": range, "enumerate": enumerate, "int": int}

GLOBALS = frozenset(HELPERS) | LAYOUT | {LOOKAHEAD} | frozenset(SAFE_BUILTINS)

# attributes generated code reads or calls: PacketState fields, runtime objects' methods
ATTRIBUTES = frozenset({
    # PacketState
    "F", "V", "NX", "VL", "data", "off", "length", "length_reg", "clone", "resubmit", "recirc",
    "digests", "truncate", "now_us", "logs", "exited",
    # counters, meters, registers, value sets; plain data methods
    "count", "execute", "values", "size", "mask", "matches", "get", "pop", "append",
    "from_bytes", "to_bytes", "join",
})
