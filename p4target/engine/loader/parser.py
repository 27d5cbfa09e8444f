"""The parser (BMv2: `Parser`, `ParseState`, `ParseSwitchCase`): header extractors and one
compiled function per parse state returning the next state's name."""
from __future__ import annotations

from typing import Callable

from ..errors import ProgramLoadError
from ..packet import PacketState, ParserException
from . import names
from .actions import Primitives
from .codegen import Namespace, int_literal, str_literal
from .expressions import Expressions
from .externs import ExternObjects
from .layout import Layout


def compress(padded: int, widths: list[int]) -> int:
    """A select-key value in byte-padded layout turned into the unpadded concatenation."""
    out = 0
    shift = sum((w + 7) // 8 * 8 for w in widths)
    for w in widths:
        shift -= (w + 7) // 8 * 8
        out = (out << w) | ((padded >> shift) & ((1 << w) - 1))
    return out


class ParserBuilder:
    """Compiles the program's first parser."""

    def __init__(self, layout: Layout, exprs: Expressions, prims: Primitives, externs: ExternObjects,
                 ns: Namespace) -> None:
        self.layout = layout
        self.exprs = exprs
        self.prims = prims
        self.externs = externs
        self.ns = ns
        self.extractors: list[Callable | None] = []
        self.varbit_extractors: set[Callable] = set()

    # -- extractors -----------------------------------------------------------------------
    def build_extractors(self) -> None:
        """One extractor per header (None for metadata and headers not byte-aligned)."""
        lay = self.layout
        too_short = lay.error_value("PacketTooShort")
        for hid, name in enumerate(lay.header_names):
            fields = lay.header_fields[name]
            total = sum(w for _, w, _ in fields)
            base = lay.header_base[hid]
            if lay.has_varbit(hid):
                self.extractors.append(self._varbit_extractor(hid, fields))
                continue
            if hid in lay.metadata or total % 8:
                self.extractors.append(None)
                continue
            nb = total // 8
            body = ["o = P.off; d = P.data",
                    f"if o + {nb} > len(d): raise ParserException({too_short})",
                    f"x = int.from_bytes(d[o:o + {nb}], 'big'); P.off = o + {nb}"]
            shift = total
            for i, (_, w, signed) in enumerate(fields):
                shift -= w
                val = f"(x >> {shift}) & {(1 << w) - 1}" if w else "0"
                body.append(f"F[{base + i}] = _tcm({val}, {w})" if signed else f"F[{base + i}] = {val}")
            body.append(f"V[{hid}] = 1")
            self.extractors.append(self.ns.compile_fn("ext", "P", body))
        self.ns[names.EXTRACTORS] = self.extractors

    def _varbit_extractor(self, hid: int, fields: list[tuple[str, int, bool]]) -> Callable:
        """Extractor `(P, bits)` of a header with a varbit field (BMv2's `extract_VL`): the
        varbit field takes `bits` bits, which must be whole bytes (else ParserInvalidArgument)
        and within its largest size (else HeaderTooShort)."""
        lay = self.layout
        base = lay.header_base[hid]
        too_short = lay.error_value("PacketTooShort")
        hdr_too_short = lay.error_value("HeaderTooShort")
        invalid_arg = lay.error_value("ParserInvalidArgument")
        vslot = next(base + i for i in range(len(fields)) if base + i in lay.varbit_slots)
        fixed = sum(w for i, (_, w, _) in enumerate(fields) if base + i != vslot)
        body = [f"if n % 8: raise ParserException({invalid_arg})",
                f"if n < 0 or n > {lay.varbit_slots[vslot]}: raise ParserException({hdr_too_short})",
                f"total = n + {fixed}; nb = total // 8; o = P.off; d = P.data",
                f"if o + nb > len(d): raise ParserException({too_short})",
                "x = int.from_bytes(d[o:o + nb], 'big'); P.off = o + nb; shift = total"]
        for i, (_, w, signed) in enumerate(fields):
            slot = base + i
            width = "n" if slot == vslot else str(w)
            body.append(f"shift -= {width}; _v = (x >> shift) & ((1 << {width}) - 1)")
            body.append(f"F[{slot}] = _tcm(_v, {w})" if signed else f"F[{slot}] = _v")
        body += [f"P.VL[{vslot}] = n", f"V[{hid}] = 1"]
        fn = self.ns.compile_fn("extvl", "P, n", body)
        self.varbit_extractors.add(fn)
        return fn

    def _check_extract(self, hid: int, name: str, kind: str) -> None:
        ext = self.extractors[hid]
        if ext is None:
            raise ProgramLoadError(f"cannot extract header '{name}' (not byte-aligned)")
        if (ext in self.varbit_extractors) != (kind == "extract_VL"):
            raise ProgramLoadError(f"'{kind}' of header '{name}' does not match its type "
                                   "(extract_VL is for headers with a varbit field)")

    # -- parse states ---------------------------------------------------------------------
    def _extract(self, kind: str, params: list[dict]) -> list[str]:
        lay = self.layout
        oob = lay.error_value("StackOutOfBounds")
        p0 = params[0]
        args = "P"
        if kind == "extract_VL":
            size = params[1]
            if size.get("type") == "expression" and "type" in size.get("value", {}):
                size = size["value"]
            args = f"P, {self.exprs.ex(size)}"
        if p0["type"] == "regular":
            hid = lay.hid(p0["value"])
            self._check_extract(hid, p0["value"], kind)
            return [f"_EXT[{hid}]({args})"]
        if p0["type"] == "stack":
            sid = lay.stack_id[p0["value"]]
            size = len(lay.stacks[p0["value"]])
            self._check_extract(lay.stacks[p0["value"]][0], p0["value"], kind)
            return [f"_i = NX[{sid}]",
                    f"if _i >= {size}: raise ParserException({oob})",
                    f"_EXT[STK[{sid}][_i]]({args}); NX[{sid}] = _i + 1"]
        if p0["type"] == "union_stack":
            usid, elems, members = lay.union_stacks[p0["value"][0]]
            m = members.index(p0["value"][1])
            self._check_extract(elems[0][m], f"{p0['value'][0]}.{p0['value'][1]}", kind)
            ids = self.ns.const("ustk", elems)
            return [f"_i = NX[{usid}]",
                    f"if _i >= {len(elems)}: raise ParserException({oob})",
                    f"_u = {ids}[_i]; _EXT[_u[{m}]]({args}); NX[{usid}] = _i + 1",
                    f"for _k, _h in enumerate(_u): V[_h] = V[_h] if _k == {m} else 0"]
        raise ProgramLoadError(f"unsupported extract target '{p0['type']}'")

    def _op(self, op: dict) -> list[str]:
        lay, x = self.layout, self.exprs
        kind = op["op"]
        params = op.get("parameters", [])
        if kind in ("extract", "extract_VL"):
            return self._extract(kind, params)
        if kind == "set":
            if params[0].get("type") == "field" and lay.fidx(params[0]["value"]) in lay.varbit_slots:
                return x.assign_varbit(params[0], params[1])  # BMv2's parser set does assign_VL
            return [x.assign(params[0], x.ex(params[1]))]
        if kind == "verify":  # older JSON gives the error code as a plain integer
            code = int_literal(params[1], "verify error") if type(params[1]) is int else x.ex(params[1])
            return [f"if not {x.ex(params[0])}: raise ParserException({code})"]
        if kind == "primitive":
            return self.prims.primitive(params[0])
        if kind == "shift":  # bytes, a plain integer in BMv2's JSON (deprecated for advance)
            return [f"P.off += {int_literal(params[0], 'shift')}"]
        if kind == "advance":
            too_short = lay.error_value("PacketTooShort")
            return [f"_n = ({x.ex(params[0])}) // 8",
                    f"if P.off + _n > len(P.data): raise ParserException({too_short})",
                    "P.off += _n"]
        raise ProgramLoadError(f"unsupported parser op '{kind}'")

    def _key_width(self, k: dict) -> int:
        lay = self.layout
        if k["type"] == "lookahead":
            return k["value"][1]
        if k["type"] == "field":
            return lay.field_width[lay.fidx(k["value"])] if k["value"][1] != "$valid$" else 1
        if k["type"] == "stack_field":
            first = lay.header_name(lay.stacks[k["value"][0]][0])
            return dict((n, fw) for n, fw, _ in lay.header_fields[first])[k["value"][1]]
        if k["type"] == "union_stack_field":
            _, elems, members = lay.union_stacks[k["value"][0]]
            member = lay.header_name(elems[0][members.index(k["value"][1])])
            return dict((n, fw) for n, fw, _ in lay.header_fields[member])[k["value"][2]]
        return 32

    def _state(self, st: dict) -> Callable:
        body: list[str] = []
        for op in st.get("parser_ops", []):
            body += self._op(op)
        key_parts = []
        key_widths = []
        for k in st.get("transition_key", []):
            w = self._key_width(k)
            key_parts.append((self.exprs.ex(k), ((w + 7) // 8) * 8))
            key_widths.append(w)
        if key_parts:
            expr = key_parts[0][0]
            for src, w in key_parts[1:]:
                expr = f"(({expr}) << {w}) | ({src})"
            body.append(f"k = {expr}")
        if any(tr.get("type") == "parse_vset" for tr in st.get("transitions", [])):
            # value sets hold the key components concatenated without byte padding
            expr = f"(({key_parts[0][0]}) & {(1 << key_widths[0]) - 1})" if key_parts else "0"
            for (src, _), w in zip(key_parts[1:], key_widths[1:]):
                expr = f"(({expr}) << {w}) | (({src}) & {(1 << w) - 1})"
            body.append(f"kc = {expr}")
        for tr in st.get("transitions", []):
            nxt = tr.get("next_state")
            nxt = "None" if nxt is None else str_literal(nxt, "next_state")
            # older p4c writes a default transition as {"value": "default"} without a type
            ttype = tr.get("type") or ("default" if tr.get("value") == "default" else "hexstr")
            if ttype == "default":
                body.append(f"return {nxt}")
                break
            if ttype == "hexstr":
                val = int(tr["value"], 16)
                mask = tr.get("mask")
                if mask:
                    body.append(f"if (k & {int(mask, 16)}) == {val & int(mask, 16)}: return {nxt}")
                else:
                    body.append(f"if k == {val}: return {nxt}")
            elif ttype == "parse_vset":
                vs = self.externs.value_set(tr.get("value"))
                mask = compress(int(tr["mask"], 16), key_widths) if tr.get("mask") else (1 << vs.bitwidth) - 1
                body.append(f"if {self.ns.const('vset', vs)}.matches(kc, {mask}): return {nxt}")
            else:
                raise ProgramLoadError(f"unsupported transition type '{ttype}'")
        else:
            body.append("return None")
        return self.ns.compile_fn("st", "P", body)

    def build(self, parsers: list[dict]) -> Callable[[PacketState], None]:
        """The parse function `(P) -> None` of the first parser."""
        if not parsers:
            raise ProgramLoadError("BMv2 JSON has no parser")
        parser = parsers[0]
        self.build_extractors()
        states: dict[str, Callable] = {st["name"]: self._state(st) for st in parser.get("parse_states", [])}
        init = parser.get("init_state")
        if init not in states:
            raise ProgramLoadError(f"parser init state '{init}' not defined")
        perr = self.layout.sm_opt("parser_error")
        no_error = self.layout.error_value("NoError")

        def parse(P: PacketState) -> None:
            # BMv2 always stores the parser's error code, NoError included (p4c may number it 1)
            if perr is not None:
                P.F[perr] = no_error
            state = init
            try:
                while state is not None:
                    state = states[state](P)
            except ParserException as exc:
                if perr is not None:
                    P.F[perr] = exc.code
        return parse
