"""Named calculations (BMv2: `NamedCalculation`): hash/checksum inputs packed to bytes and run
through one of BMv2's algorithms. Used by hash primitives, checksums and action selectors."""
from __future__ import annotations

from typing import Any, Callable

from .. import hashes
from ..errors import ProgramLoadError
from .codegen import Namespace, int_literal
from .expressions import Expressions
from .layout import Layout


class CalcInputs:
    """The source of a calculation's `[(value, width), ...]` list, as built by `inputs()`.

    `source` skips fields of invalid headers as BMv2 does; `parts` is the same list as if every
    header were valid, `guards` the headers whose validity matters, `payload` whether the
    packet's payload follows."""

    def __init__(self) -> None:
        self.items: list[str] = []
        self.parts: list[tuple[str, Any]] = []
        self.guards: list[int] = []
        self.payload = False

    @property
    def source(self) -> str:
        return "[" + ", ".join(self.items) + "]"


class Calculations:
    """Compiled functions `(P) -> int` of a program's named calculations."""

    def __init__(self, j: dict, layout: Layout, exprs: Expressions, ns: Namespace) -> None:
        self.layout = layout
        self.exprs = exprs
        self.ns = ns
        self.calcs = {c["name"]: c for c in j.get("calculations", [])}
        self._syms: dict[str, str] = {}

    def inputs(self, inputs: list[dict]) -> CalcInputs:
        lay = self.layout
        out = CalcInputs()

        def guarded(hname: str, w: Any) -> Any:
            hid = lay.hid(hname)
            if hid in lay.metadata:
                return w
            if hid not in out.guards:
                out.guards.append(hid)
            return f"({w} if V[{hid}] else 0)"

        for inp in inputs:
            t = inp["type"]
            if t == "field":
                i = lay.fidx(inp["value"])
                w = f"P.VL.get({i}, 0)" if i in lay.varbit_slots else lay.field_width[i]
                out.items.append(f"(F[{i}], {guarded(inp['value'][0], w)})")
                out.parts.append((f"F[{i}]", w))
            elif t == "hexstr":
                bw = int_literal(inp.get("bitwidth", 8), "calculation input bitwidth")
                out.items.append(f"({int(inp['value'], 16)}, {bw})")
                out.parts.append((str(int(inp['value'], 16)), int(bw)))
            elif t == "header":
                h = inp["value"]
                lay.hid(h)
                for fname, w, _ in lay.header_fields[h]:
                    i = lay.field_index[(h, fname)]
                    w = f"P.VL.get({i}, 0)" if i in lay.varbit_slots else w
                    out.items.append(f"(F[{i}], {guarded(h, w)})")
                    out.parts.append((f"F[{i}]", w))
            elif t == "payload":
                out.payload = True
            elif t == "expression":
                bw = int_literal(inp.get("bitwidth", 32), "calculation input bitwidth")
                src = self.exprs.ex(inp["value"])
                out.items.append(f"({src}, {bw})")
                out.parts.append((src, int(bw)))
            else:
                raise ProgramLoadError(f"unsupported calculation input '{t}'")
        return out

    @staticmethod
    def _packer(inp: CalcInputs) -> str:
        """Source packing the inputs to bytes; inline when every width is known and byte-aligned."""
        items = inp.parts
        if any(isinstance(w, str) for _, w in items):  # varbit: width known per packet
            return f"_pack({inp.source})"
        total = sum(w for _, w in items)
        if not items or total % 8:
            return f"_pack({inp.source})"
        shift = total
        terms = []
        for src, w in items:
            shift -= w
            terms.append(f"((({src}) & {(1 << w) - 1}) << {shift})")
        return f"({' | '.join(terms)}).to_bytes({total // 8}, 'big')"

    def symbol(self, name: Any) -> str:
        """Symbol of the compiled function `(P) -> int` of a named calculation."""
        if type(name) is not str or name not in self.calcs:
            raise ProgramLoadError(f"unknown calculation {name!r:.60}")
        if name in self._syms:
            return self._syms[name]
        c = self.calcs[name]
        algo = c["algo"]
        if type(algo) is not str or algo not in hashes.ALGORITHMS:
            raise ProgramLoadError(f"hash algorithm {algo!r:.60} of '{name}' is not supported")
        algo_sym = self.ns.const("algo", hashes.ALGORITHMS[algo])
        inp = self.inputs(c["input"])
        data = self._packer(inp)
        if inp.guards:  # the fast packing when every header is valid, else skip the invalid
            valid = " and ".join(f"V[{h}]" for h in inp.guards)
            data = f"({data} if {valid} else _pack({inp.source}))"
        data += " + _payload(P)" if inp.payload else ""
        fn = self.ns.compile_fn("calc", "P", [f"return {algo_sym}({data})"])
        sym = self._syms[name] = self.ns.const("calcfn", fn)
        return sym

    def selector(self, sel: dict) -> Callable:
        """The hash function `(P) -> int` of an action selector."""
        algo = hashes.ALGORITHMS.get(sel.get("algo")) if isinstance(sel.get("algo"), str) else None
        if algo is None:
            raise ProgramLoadError(f"selector algorithm {sel.get('algo')!r:.60} is not supported")
        inp = self.inputs(sel.get("input", []))
        return self.ns.compile_fn("sel", "P", [f"return {self.ns.const('salgo', algo)}(_pack({inp.source}))"])
